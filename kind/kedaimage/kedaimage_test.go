package kedaimage

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/scaleproof/scaleproof/autoscaler/deploy/image"
	"github.com/scaleproof/scaleproof/autoscaler/deploy/render"
)

func TestKEDAInputsHash(t *testing.T) {
	base := NewKEDAInputs("v2.21.0", "go1.26.8", "amd64")
	if got := NewKEDAInputs("v2.21.0", "go1.26.8", "amd64"); got.Hash() != base.Hash() || got.Tag() != base.Tag() {
		t.Fatalf("same inputs, hashes %s and %s", got.Hash(), base.Hash())
	}
	if !strings.HasPrefix(base.Tag(), "2.21.0-") || len(base.Hash()) != 12 {
		t.Errorf("tag %q, want 2.21.0-<12 hex digits>", base.Tag())
	}
	if _, err := name.NewTag(base.Ref("keda"), name.StrictValidation); err != nil {
		t.Errorf("ref %s: %v", base.Ref("keda"), err)
	}
	for _, tc := range []struct {
		name   string
		change func(*KEDAInputs)
	}{
		{"module version", func(in *KEDAInputs) { *in = NewKEDAInputs("v2.20.2", in.GoVersion, in.GOARCH) }},
		{"go version", func(in *KEDAInputs) { in.GoVersion = "go1.26.9" }},
		{"arch", func(in *KEDAInputs) { in.GOARCH = "arm64" }},
		{"build flags", func(in *KEDAInputs) { in.Flags = append(append([]string(nil), in.Flags...), "-tags", "timetzdata") }},
		{"ldflags", func(in *KEDAInputs) {
			f := append([]string(nil), in.Flags...)
			f[len(f)-1] += " -X main.x=1"
			in.Flags = f
		}},
		{"environment (cgo)", func(in *KEDAInputs) { in.Env = []string{"CGO_ENABLED=1"} }},
		{"binaries", func(in *KEDAInputs) { in.Binaries = in.Binaries[:2] }},
		{"revision", func(in *KEDAInputs) { in.Revision++ }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := NewKEDAInputs("v2.21.0", "go1.26.8", "amd64")
			tc.change(&in)
			if in.Hash() == base.Hash() {
				t.Errorf("changing the %s kept the hash %s", tc.name, base.Hash())
			}
		})
	}
	// The version stamps follow the version (KEDA's own GO_LDFLAGS).
	if f := strings.Join(base.Flags, " "); !strings.Contains(f, "version.Version=2.21.0") || !strings.Contains(f, "-trimpath") {
		t.Errorf("flags %q lack -trimpath or the version stamp", f)
	}
	if !reflect.DeepEqual(base.Env[:1], []string{"CGO_ENABLED=0"}) {
		t.Errorf("env %v, want CGO_ENABLED=0 first", base.Env)
	}
}

func TestPrometheusInputsHash(t *testing.T) {
	files := []File{{Path: "/bin/prometheus", Body: []byte("a")}, {Path: "/lib64/ld.so", Body: []byte("b")}}
	base := NewPrometheusInputs("2.42.0+ds", files)
	if NewPrometheusInputs("2.42.0+ds", files).Hash() != base.Hash() {
		t.Fatal("same inputs, different hashes")
	}
	if !strings.HasPrefix(base.Tag(), "2.42.0_ds-") {
		t.Errorf("tag %q, want 2.42.0_ds-<hash>", base.Tag())
	}
	if _, err := name.NewTag(base.Ref(), name.StrictValidation); err != nil {
		t.Errorf("ref %s: %v", base.Ref(), err)
	}
	for n, in := range map[string]PrometheusInputs{
		"version":      NewPrometheusInputs("2.43.0", files),
		"binary":       NewPrometheusInputs("2.42.0+ds", []File{{Path: "/bin/prometheus", Body: []byte("c")}, files[1]}),
		"another file": NewPrometheusInputs("2.42.0+ds", append(files[:2:2], File{Path: "/lib/libc.so.6", Body: []byte("d")})),
	} {
		if in.Hash() == base.Hash() {
			t.Errorf("changing the %s kept the hash", n)
		}
	}
	for in, want := range map[string]string{"2.42.0+ds": "2.42.0_ds", "-x": "x", "": "unknown", "v1/2": "v1_2"} {
		if got := tagSafe(in); got != want {
			t.Errorf("tagSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// layerFiles reads the one layer of the archive at p under ref.
func layerFiles(t *testing.T, p, ref string) map[string]*tar.Header {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(p, &tag)
	if err != nil {
		t.Fatalf("tarball.ImageFromPath(%s, %s): %v", p, ref, err)
	}
	ls, err := img.Layers()
	if err != nil || len(ls) != 1 {
		t.Fatalf("layers %d, %v; want 1", len(ls), err)
	}
	rc, err := ls[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h
	}
	return out
}

func TestWriteArchive(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.tar")
	ref := "scaleproof.local/prometheus:2.42.0-0123456789ab"
	files := []File{{Path: "/bin/prometheus", Body: []byte("bin")}, {Path: "/lib/x86_64-linux-gnu/libc.so.6", Body: []byte("libc"), Mode: 0o644}}
	if err := writeArchive(p, ref, Config{Entrypoint: []string{"/bin/prometheus"}, User: "65534:65534", Title: "prometheus"}, files); err != nil {
		t.Fatal(err)
	}
	if err := checkArchive(p, ref); err != nil {
		t.Fatalf("checkArchive: %v", err)
	}
	if err := checkArchive(p, "scaleproof.local/prometheus:other"); err == nil {
		t.Error("checkArchive under another tag: no error")
	}
	got := layerFiles(t, p, ref)
	for n, mode := range map[string]int64{"bin/": 0o755, "bin/prometheus": 0o755, "lib/": 0o755, "lib/x86_64-linux-gnu/": 0o755, "lib/x86_64-linux-gnu/libc.so.6": 0o644, "tmp/": 0o1777} {
		if h := got[n]; h == nil || h.Mode != mode {
			t.Errorf("%s: %v, want mode %o", n, h, mode)
		}
	}
	a, _ := os.ReadFile(p)
	if err := writeArchive(p, ref, Config{Entrypoint: []string{"/bin/prometheus"}, User: "65534:65534", Title: "prometheus"}, files); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(a) != string(b) {
		t.Error("the same files gave different archives")
	}
	for _, bad := range [][]File{nil, {{Path: "rel", Body: []byte("x")}}, {{Path: "/x", Body: nil}},
		{{Path: "/a", Body: []byte("x")}, {Path: "/a", Body: []byte("y")}}, {{Path: "/a", Body: []byte("x")}, {Path: "/a/b", Body: []byte("y")}}} {
		if err := writeArchive(filepath.Join(dir, "bad.tar"), ref, Config{}, bad); err == nil {
			t.Errorf("files %v: no error", bad)
		}
	}
}

const debianPrometheus = "/usr/bin/prometheus"

func TestPrometheusFilesDebian(t *testing.T) {
	if _, err := os.Stat(debianPrometheus); err != nil {
		t.Skip("no Debian prometheus (make deps-prometheus)")
	}
	files, err := PrometheusFiles("", debianPrometheus)
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, f := range files {
		paths[f.Path] = true
	}
	if !paths["/bin/prometheus"] {
		t.Errorf("no /bin/prometheus in %v", paths)
	}
	if len(files) > 1 {
		// Dynamically linked (Debian's 2.42 is): the loader and libc go in.
		libc := false
		for p := range paths {
			libc = libc || strings.HasSuffix(p, "/libc.so.6")
		}
		if !libc {
			t.Errorf("dynamically linked, but no libc.so.6 in %v", paths)
		}
	}
}

func TestSharedDepsMissingLibrary(t *testing.T) {
	b, err := os.ReadFile(debianPrometheus)
	if err != nil {
		t.Skip("no Debian prometheus (make deps-prometheus)")
	}
	if image.CheckStatic(b) == nil {
		t.Skip("the prometheus here is static")
	}
	// A root holding only the binary: its libraries are in none of the folders.
	root := t.TempDir()
	_ = os.MkdirAll(filepath.Join(root, "bin"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "bin", "p"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := PrometheusFiles(root, "/bin/p"); err == nil || !strings.Contains(err.Error(), "needs") {
		t.Errorf("err %v, want one naming the missing library", err)
	}
}

// TestEnsureCached: with KEDA's archives in the cache dir, Ensure builds
// nothing for KEDA, packs Prometheus, and a second Ensure is all cached with
// the same refs; the refs are the ones the manifests render.
func TestEnsureCached(t *testing.T) {
	if testing.Short() {
		t.Skip("packs Debian's prometheus (100 MB) twice")
	}
	if _, err := os.Stat(debianPrometheus); err != nil {
		t.Skip("no Debian prometheus (make deps-prometheus)")
	}
	ctx := context.Background()
	dir := t.TempDir()
	o := Options{CacheDir: dir}
	in, err := KEDA(ctx, o)
	if err != nil {
		t.Skip(err)
	}
	ms, err := MetricsServer(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	fakeArchives(t, dir, in, ms)
	res, err := Ensure(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Images) != 5 {
		t.Fatalf("images %+v, want 3 KEDA, Prometheus and metrics-server", res.Images)
	}
	for _, im := range append(res.Images[:3:3], res.Images[4]) {
		if !im.Cached || im.Size == 0 {
			t.Errorf("%s: cached %v size %d, want the archive that was there", im.Name, im.Cached, im.Size)
		}
	}
	prom := res.Images[3]
	if prom.Cached || prom.Name != "prometheus" {
		t.Errorf("prometheus %+v: want built now", prom)
	}
	if _, err := os.Stat(filepath.Join(dir, "work")); err == nil {
		t.Error("a work dir was made although KEDA's and metrics-server's archives were cached")
	}
	if res.Images[4].Name != "metrics-server" || res.Images[4].Ref != ms.Ref("metrics-server") {
		t.Errorf("last image %+v, want metrics-server %s", res.Images[4], ms.Ref("metrics-server"))
	}
	got := layerFiles(t, prom.Archive, prom.Ref)
	if got["bin/prometheus"] == nil {
		t.Error("no bin/prometheus in the image")
	}
	again, err := Ensure(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	for i, im := range again.Images {
		if !im.Cached || im.Ref != res.Images[i].Ref {
			t.Errorf("second Ensure: %s cached %v ref %s, want cached %s", im.Name, im.Cached, im.Ref, res.Images[i].Ref)
		}
	}
	// The refs render: KEDA's manifests and Prometheus's point at them.
	objs, err := render.KEDA(render.KEDAParams{Operator: res.Ref("keda"), MetricsAPIServer: res.Ref("keda-metrics-apiserver"), Webhooks: res.Ref("keda-admission-webhooks")})
	if err != nil {
		t.Fatal(err)
	}
	y, _ := render.ObjectsYAML(objs)
	for _, n := range []string{"keda", "keda-metrics-apiserver", "keda-admission-webhooks"} {
		if !strings.Contains(string(y), "image: "+res.Ref(n)+"\n") {
			t.Errorf("KEDA's manifests do not run %s", res.Ref(n))
		}
	}
	if _, err := render.Prometheus(render.PrometheusParams{Namespace: "run", Image: prom.Ref}); err != nil {
		t.Errorf("render.Prometheus(%s): %v", prom.Ref, err)
	}
}

// TestPrometheusFilesRun: the Prometheus image's files alone (no other
// file of the host) are enough for the binary to start: it runs chrooted
// into a folder holding only them. Needs root (chroot).
func TestPrometheusFilesRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}
	if _, err := os.Stat(debianPrometheus); err != nil {
		t.Skip("no Debian prometheus (make deps-prometheus)")
	}
	files, err := PrometheusFiles("", debianPrometheus)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, f := range files {
		p := filepath.Join(root, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Body, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "/bin/prometheus", "--version")
	c.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	c.Dir = "/"
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "prometheus, version") {
		t.Fatalf("chrooted /bin/prometheus --version: %v: %s", err, out)
	}
	// Without its libraries it cannot start: the check above could fail.
	if len(files) > 1 {
		_ = os.RemoveAll(filepath.Join(root, "lib"))
		c := exec.CommandContext(ctx, "/bin/prometheus", "--version")
		c.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
		c.Dir = "/"
		if out, err := c.CombinedOutput(); err == nil {
			t.Errorf("ran without /lib: %s", out)
		}
	}
}
