package nodeimage

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestHashAndTag(t *testing.T) {
	base := NewInputs(Default, "go1.26.8")
	if !regexp.MustCompile(`^localhost/scaleproof/kind-node:v1\.37\.0-[0-9a-f]{12}$`).MatchString(base.Tag()) {
		t.Fatalf("tag %q", base.Tag())
	}
	if NewInputs(Default, "go1.26.8").Hash() != base.Hash() {
		t.Fatal("same inputs, different hash")
	}
	if len(base.Assets) < 4 {
		t.Fatalf("assets not hashed: %v", base.Assets)
	}
	changed := map[string]Inputs{}
	v := Default
	v.Containerd = "v2.3.5"
	changed["containerd version"] = NewInputs(v, "go1.26.8")
	changed["go version"] = NewInputs(Default, "go1.26.9")
	in := NewInputs(Default, "go1.26.8")
	in.Revision++
	changed["recipe revision"] = in
	in = NewInputs(Default, "go1.26.8")
	in.Assets["files/iptables-wrapper"] = "0"
	changed["an asset"] = in
	in = NewInputs(Default, "go1.26.8")
	in.Packages = append(in.Packages, "nfs-common")
	changed["package list"] = in
	for what, in := range changed {
		if in.Hash() == base.Hash() {
			t.Errorf("changing the %s keeps the hash", what)
		}
	}
	if !strings.HasSuffix(base.ArchiveName(), base.Hash()+".tar.zst") {
		t.Errorf("archive name %q", base.ArchiveName())
	}
}

func TestKubeWrapperGoMod(t *testing.T) {
	upstream := `module k8s.io/kubernetes

go 1.26.0

require (
	k8s.io/api v0.0.0
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	github.com/foo/bar => github.com/foo/bar v1.0.0
)
`
	got := kubeWrapperGoMod(Default, upstream)
	for _, want := range []string{"require k8s.io/kubernetes v1.37.0", "\tk8s.io/api => k8s.io/api v0.37.0\n", "\tk8s.io/client-go => k8s.io/client-go v0.37.0\n", "go 1.26.0"} {
		if !strings.Contains(got, want) {
			t.Errorf("go.mod lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "foo/bar") {
		t.Errorf("a non-staging replace was copied:\n%s", got)
	}
	ld := kubeVersionLDFlags(Default)
	for _, want := range []string{"k8s.io/component-base/version.gitVersion=v1.37.0", "k8s.io/client-go/pkg/version.gitMinor=37", "gitMajor=1", "gitTreeState=clean"} {
		if !strings.Contains(ld, want) {
			t.Errorf("ldflags lack %q: %s", want, ld)
		}
	}
}

func TestAptMirror(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sources []string
		want    string
	}{
		{"deb822 with security first", []string{"Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\n\nTypes: deb\nURIs: http://mirror.example/debian/\nSuites: bookworm\n"}, "http://mirror.example/debian"},
		{"one-line with options", []string{"deb [arch=amd64 signed-by=/k.gpg] https://ftp.example/debian bookworm main\n"}, "https://ftp.example/debian"},
		{"third-party only", []string{"deb https://packages.cloud.google.com/apt cloud-sdk-bookworm main\n"}, DefaultMirror},
		{"none", nil, DefaultMirror},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AptMirror(tc.sources...); got != tc.want {
				t.Fatalf("AptMirror = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCRIBaseSpec(t *testing.T) {
	in := `{"ociVersion":"1.2.0","process":{"args":["sh"],"rlimits":[{"type":"RLIMIT_NOFILE","hard":1024,"soft":1024}]},"hooks":{"createContainer":[{"path":"/x"}]}}`
	out, err := criBaseSpec([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Contains(s, "rlimits") {
		t.Errorf("rlimits kept: %s", s)
	}
	if !strings.Contains(s, `"/x"`) || !strings.Contains(s, "/kind/bin/mount-product-files.sh") {
		t.Errorf("hooks wrong: %s", s)
	}
	if _, err := criBaseSpec([]byte("not json")); err == nil {
		t.Error("bad spec accepted")
	}
	// no hooks at all: the hook list is made
	out, err = criBaseSpec([]byte(`{"process":{}}`))
	if err != nil || !strings.Contains(string(out), "mount-product-files.sh") {
		t.Errorf("no hooks: %s %v", out, err)
	}
}

func TestRestrictOOMScoreAdj(t *testing.T) {
	got, err := restrictOOMScoreAdj("a\n  restrict_oom_score_adj = false\nb\n")
	if err != nil || !strings.Contains(got, "restrict_oom_score_adj = true") || strings.Contains(got, "= false") {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := restrictOOMScoreAdj("version = 3\n"); err == nil {
		t.Fatal("a config without the setting was accepted")
	}
	if got, err := restrictOOMScoreAdj("restrict_oom_score_adj = true\n"); err != nil || got != "restrict_oom_score_adj = true\n" {
		t.Fatalf("already on: %q %v", got, err)
	}
}

func TestCheckComplete(t *testing.T) {
	out := `REF                                   TYPE                                                 DIGEST   STATUS           SIZE            UNPACKED
registry.k8s.io/pause:3.10            application/vnd.docker.distribution.manifest.v2+json sha256:a complete (2/2)   300.0 KiB/300.0 KiB false
registry.k8s.io/etcd:3.7.0-0          application/vnd.docker.distribution.manifest.v2+json sha256:b incomplete (1/2) 1 MiB/2 MiB false
`
	if err := checkComplete(out, []string{"registry.k8s.io/pause:3.10"}); err != nil {
		t.Fatal(err)
	}
	err := checkComplete(out, []string{"registry.k8s.io/pause:3.10", "registry.k8s.io/etcd:3.7.0-0", "registry.k8s.io/coredns/coredns:v1.14.6"})
	if err == nil || !strings.Contains(err.Error(), "etcd") || !strings.Contains(err.Error(), "coredns") || strings.Contains(err.Error(), "pause") {
		t.Fatalf("err = %v", err)
	}
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { c.t = c.t.Add(1500 * time.Millisecond); return c.t }

func TestStepsNameTheFailedStepAndItsLog(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{t: time.Unix(0, 0)}
	st := newSteps(dir, slog.New(slog.NewTextHandler(io.Discard, nil)), clk.now)
	ctx := context.Background()
	if err := st.Run(ctx, "first", func() bool { return true }, func(*stepCtx) error { t.Fatal("a cached step ran"); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := st.Run(ctx, "second", nil, func(sc *stepCtx) error { return sc.Cmd("", nil, "sh", "-c", "echo hello-from-tool") }); err != nil {
		t.Fatal(err)
	}
	err := st.Run(ctx, "third", nil, func(sc *stepCtx) error { return sc.Cmd("", nil, "sh", "-c", "echo broken >&2; exit 3") })
	se, ok := IsStepError(err)
	if !ok {
		t.Fatalf("err %v is not a step error", err)
	}
	if se.Step != "third" || filepath.Base(se.Log) != "03-third.log" {
		t.Fatalf("step %q log %q", se.Step, se.Log)
	}
	if !strings.Contains(err.Error(), `"third"`) || !strings.Contains(err.Error(), se.Log) || !strings.Contains(err.Error(), "1.5 s") {
		t.Fatalf("message %q", err)
	}
	b, _ := os.ReadFile(se.Log)
	if !strings.Contains(string(b), "broken") || !strings.Contains(string(b), "FAILED") {
		t.Fatalf("log %q", b)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "02-second.log"))
	if !strings.Contains(string(b), "hello-from-tool") || !strings.Contains(string(b), "done in 1.5 s") {
		t.Fatalf("log of second %q", b)
	}
	if len(st.Times) != 3 || !st.Times[0].Cached || st.Times[1].Elapsed != 1500*time.Millisecond {
		t.Fatalf("times %+v", st.Times)
	}
	if errors.Unwrap(err) == nil {
		t.Fatal("the tool's error is not wrapped")
	}
}

func TestComponentImagesExactTags(t *testing.T) {
	dir := t.TempDir()
	rootfs := filepath.Join(dir, "rootfs")
	for p, body := range map[string]string{
		"etc/ssl/certs/ca-certificates.crt":  "CERT",
		"usr/sbin/xtables-nft-multi":         "#!/bin/sh\n",
		"usr/share/doc/x/README":             "docs",
		"usr/lib/x86_64-linux-gnu/libc.so.6": "libc",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(rootfs, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(rootfs, p), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("xtables-nft-multi", filepath.Join(rootfs, "usr/sbin/iptables")); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	imgs := ComponentImages(Default, func(n string) string {
		p := filepath.Join(bin, n)
		_ = os.WriteFile(p, []byte("binary "+n), 0o755)
		return p
	})
	out := filepath.Join(dir, "images.tar")
	if err := writeComponentImages(imgs, rootfs, filepath.Join(dir, "work"), out); err != nil {
		t.Fatal(err)
	}
	want := []string{"registry.k8s.io/coredns/coredns:v1.14.6", "registry.k8s.io/etcd:3.7.0-0", "registry.k8s.io/kube-apiserver:v1.37.0",
		"registry.k8s.io/kube-controller-manager:v1.37.0", "registry.k8s.io/kube-proxy:v1.37.0", "registry.k8s.io/kube-scheduler:v1.37.0",
		"registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10.2"}
	if got := AllTags(imgs); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("tags %v", got)
	}
	if err := checkRepoTags(out, want); err != nil {
		t.Fatal(err)
	}
	if err := checkRepoTags(out, want[1:]); err == nil {
		t.Fatal("checkRepoTags accepted a tag list that differs")
	}
}

func TestSlimSkip(t *testing.T) {
	for rel, skip := range map[string]bool{"usr/share/doc": true, "usr/share/doc/a": true, "usr/sbin/iptables": false, "var/lib/dpkg/status": true, "usr/share/docs": false, "proc": true} {
		if slimSkip(rel) != skip {
			t.Errorf("slimSkip(%q) = %v", rel, !skip)
		}
	}
}

func TestLockWorkWaitsForTheOther(t *testing.T) {
	p := filepath.Join(t.TempDir(), "w.lock")
	ctx := context.Background()
	unlock, err := lockWork(ctx, p, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{}, 1)
	got := make(chan error, 1)
	go func() {
		u, err := lockWork(ctx, p, func(string, ...any) { waiting <- struct{}{} })
		if err == nil {
			u()
		}
		got <- err
	}()
	<-waiting // the second one saw the lock held
	select {
	case err := <-got:
		t.Fatalf("second lock taken while the first is held: %v", err)
	default:
	}
	unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	unlock, _ = lockWork(ctx, p, func(string, ...any) {})
	defer unlock()
	go func() { <-waiting; cancel() }()
	if _, err := lockWork(cctx, p, func(string, ...any) { waiting <- struct{}{} }); err == nil {
		t.Fatal("a cancelled wait took the lock")
	}
}

func TestPreflightNamesWhatIsMissing(t *testing.T) {
	err := Preflight("no-such-podman-xyz")
	if err == nil || !strings.Contains(err.Error(), "no-such-podman-xyz") || !strings.Contains(err.Error(), "make deps-kind") {
		t.Fatalf("err %v", err)
	}
}

// fakePodman writes a podman stand-in: `image exists` answers from a state
// file, `load` reads the archive from stdin and makes the image exist,
// `save` writes a few bytes.
func fakePodman(t *testing.T) (podman, state string) {
	t.Helper()
	dir := t.TempDir()
	state = filepath.Join(dir, "exists")
	podman = filepath.Join(dir, "podman")
	script := "#!/bin/sh\ncase \"$1 $2\" in\n" +
		"\"image exists\") test -f " + state + " ;;\n" +
		"\"load \"*) cat >/dev/null && touch " + state + " ;;\n" +
		"\"save \"*) echo archive-bytes ;;\n" +
		"*) echo \"unexpected podman $*\" >&2; exit 9 ;;\nesac\n"
	if err := os.WriteFile(podman, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return podman, state
}

func TestEnsurePresentThenLoadedFromArchive(t *testing.T) {
	if _, err := os.Stat("/usr/bin/zstd"); err != nil {
		t.Skip("zstd not installed")
	}
	ctx := context.Background()
	podman, state := fakePodman(t)
	cache := t.TempDir()
	b, err := New(ctx, Options{Podman: podman, CacheDir: cache, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	// an archive in the cache folder, as a CI cache restores it
	if err := SaveArchive(ctx, io.Discard, podman, b.Tag(), b.ArchivePath()); err != nil {
		t.Fatal(err)
	}
	res, err := b.Ensure(ctx)
	if err != nil || res.How != "loaded" || res.Archive != b.ArchivePath() || res.Tag != b.Tag() {
		t.Fatalf("first Ensure: %+v %v", res, err)
	}
	if _, err := os.Stat(state); err != nil {
		t.Fatal("podman load did not run")
	}
	res, err = b.Ensure(ctx)
	if err != nil || res.How != "present" || len(res.Steps) != 0 {
		t.Fatalf("second Ensure rebuilt or reloaded: %+v %v", res, err)
	}
}

// IsStepError reports whether err is a failed build step and returns it.
func IsStepError(err error) (*StepError, bool) {
	var se *StepError
	ok := errors.As(err, &se)
	return se, ok
}
