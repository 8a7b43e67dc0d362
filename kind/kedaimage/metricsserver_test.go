package kedaimage

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
)

// TestKEDATagUnchanged: adding metrics-server (and Binary.User) left KEDA's
// inputs, so the archives already cached under this tag stay valid.
func TestKEDATagUnchanged(t *testing.T) {
	if got := NewKEDAInputs("v2.21.0", "go1.26.8", "amd64").Tag(); got != "2.21.0-c51644a6fd92" {
		t.Errorf("KEDA tag %s, want 2.21.0-c51644a6fd92 (a changed hash rebuilds every cached KEDA image)", got)
	}
}

func TestMetricsServerInputsHash(t *testing.T) {
	base := NewMetricsServerInputs("v0.8.0", "go1.26.8", "amd64")
	if got := NewMetricsServerInputs("v0.8.0", "go1.26.8", "amd64"); got.Hash() != base.Hash() {
		t.Fatalf("same inputs, hashes %s and %s", got.Hash(), base.Hash())
	}
	if !strings.HasPrefix(base.Tag(), "0.8.0-") || len(base.Hash()) != 12 {
		t.Errorf("tag %q, want 0.8.0-<12 hex digits>", base.Tag())
	}
	if base.Hash() == NewKEDAInputs("v2.21.0", "go1.26.8", "amd64").Hash() {
		t.Error("metrics-server and KEDA share a hash")
	}
	ref := base.Ref("metrics-server")
	if _, err := name.NewTag(ref, name.StrictValidation); err != nil || !strings.HasPrefix(ref, "scaleproof.local/metrics-server:0.8.0-") {
		t.Errorf("ref %s: %v", ref, err)
	}
	for _, tc := range []struct {
		name   string
		change func(*GoInputs)
	}{
		{"module version", func(in *GoInputs) { *in = NewMetricsServerInputs("v0.7.2", in.GoVersion, in.GOARCH) }},
		{"go version", func(in *GoInputs) { in.GoVersion = "go1.26.9" }},
		{"arch", func(in *GoInputs) { in.GOARCH = "arm64" }},
		{"ldflags", func(in *GoInputs) {
			f := append([]string(nil), in.Flags...)
			f[len(f)-1] += " -X main.x=1"
			in.Flags = f
		}},
		{"image user", func(in *GoInputs) {
			in.Binaries = []Binary{{Name: "metrics-server", Package: "./cmd/metrics-server", Entrypoint: "/metrics-server"}}
		}},
		{"revision", func(in *GoInputs) { in.Revision++ }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := NewMetricsServerInputs("v0.8.0", "go1.26.8", "amd64")
			tc.change(&in)
			if in.Hash() == base.Hash() {
				t.Errorf("changing the %s kept the hash %s", tc.name, base.Hash())
			}
		})
	}
	f := strings.Join(base.Flags, " ")
	if !strings.Contains(f, "k8s.io/client-go/pkg/version.gitVersion=v0.8.0") || !strings.Contains(f, "-trimpath") {
		t.Errorf("flags %q lack -trimpath or the version stamp", f)
	}
	if base.Env[0] != "CGO_ENABLED=0" || base.Module != MetricsServerModule || len(base.Binaries) != 1 {
		t.Errorf("inputs %+v: want one static binary of %s", base, MetricsServerModule)
	}
}

// TestWorkDirNames: KEDA's work folders are where they were; another
// module's never collide with them.
func TestWorkDirNames(t *testing.T) {
	k := NewKEDAInputs("v2.21.0", "go1.26.8", "amd64")
	m := NewMetricsServerInputs("v0.8.0", "go1.26.8", "amd64")
	for _, tc := range []struct{ got, want string }{
		{srcDirName(k), "src-v2.21.0"},
		{binDirName(k), "bin-" + k.Tag()},
		{srcDirName(m), "src-metrics-server-v0.8.0"},
		{binDirName(m), "bin-metrics-server-" + m.Tag()},
	} {
		if tc.got != tc.want {
			t.Errorf("work dir %s, want %s", tc.got, tc.want)
		}
	}
}

// fakeArchives writes loadable archives of KEDA's and metrics-server's
// images into dir's images/ (what a finished build leaves).
func fakeArchives(t *testing.T, dir string, sets ...GoInputs) {
	t.Helper()
	for _, in := range sets {
		for _, bin := range in.Binaries {
			p := filepath.Join(dir, "images", bin.Name+"-"+in.Tag()+".tar")
			if err := writeArchive(p, in.Ref(bin.Name), Config{Entrypoint: []string{bin.Entrypoint}}, []File{{Path: bin.Entrypoint, Body: []byte("fake")}}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestEnsureOnly: Only picks the sets Ensure makes sure of; an unknown set
// is an error naming it before anything is touched.
func TestEnsureOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	o := Options{CacheDir: dir}
	in, err := KEDA(ctx, o)
	if err != nil {
		t.Skip(err)
	}
	ms, _ := MetricsServer(ctx, o)
	fakeArchives(t, dir, in, ms)
	for _, tc := range []struct {
		only    []string
		want    []string // image names, in order
		wantErr string
	}{
		{[]string{SetMetricsServer}, []string{"metrics-server"}, ""},
		{[]string{SetKEDA}, []string{"keda", "keda-metrics-apiserver", "keda-admission-webhooks"}, ""},
		{[]string{SetMetricsServer, SetKEDA}, []string{"keda", "keda-metrics-apiserver", "keda-admission-webhooks", "metrics-server"}, ""},
		{[]string{SetKEDA, "grafana"}, nil, `"grafana"`},
	} {
		o := o
		o.Only = tc.only
		if tc.wantErr != "" {
			o.CacheDir = filepath.Join(dir, "unused")
		}
		res, err := Ensure(ctx, o)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Only %v: err %v, want %s", tc.only, err, tc.wantErr)
			}
			if _, err := os.Stat(o.CacheDir); err == nil {
				t.Errorf("Only %v: the cache dir was made", tc.only)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Only %v: %v", tc.only, err)
		}
		var got []string
		for _, im := range res.Images {
			got = append(got, im.Name)
			if !im.Cached {
				t.Errorf("Only %v: %s not cached", tc.only, im.Name)
			}
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("Only %v: images %v, want %v", tc.only, got, tc.want)
		}
		if res.Ref("metrics-server") != "" && res.Ref("metrics-server") != ms.Ref("metrics-server") {
			t.Errorf("metrics-server ref %s, want %s", res.Ref("metrics-server"), ms.Ref("metrics-server"))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "work")); err == nil {
		t.Error("a work dir was made although every archive was cached")
	}
}

// TestLookup: Lookup finds the cached archives and names the missing ones
// with their refs, building nothing.
func TestLookup(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	o := Options{CacheDir: dir, Only: []string{SetKEDA, SetMetricsServer}}
	in, err := KEDA(ctx, o)
	if err != nil {
		t.Skip(err)
	}
	ms, _ := MetricsServer(ctx, o)
	res, missing, err := Lookup(ctx, o)
	if err != nil || len(res.Images) != 0 || len(missing) != 4 || !strings.Contains(strings.Join(missing, " "), ms.Ref("metrics-server")) {
		t.Errorf("empty cache: %v missing %v err %v, want the 4 images missing by ref", res.Images, missing, err)
	}
	fakeArchives(t, dir, ms)
	res, missing, _ = Lookup(ctx, o)
	if len(res.Images) != 1 || res.Ref("metrics-server") != ms.Ref("metrics-server") || len(missing) != 3 || !strings.Contains(missing[0], in.Ref("keda")) {
		t.Errorf("metrics-server cached: %v missing %v", res.Images, missing)
	}
	fakeArchives(t, dir, in)
	res, missing, _ = Lookup(ctx, o)
	if len(res.Images) != 4 || len(missing) != 0 || res.Images[3].Name != "metrics-server" || res.Images[0].Size == 0 {
		t.Errorf("all cached: %v missing %v", res.Images, missing)
	}
	if _, err := os.Stat(filepath.Join(dir, "work")); err == nil {
		t.Error("Lookup made a work dir")
	}
	if _, _, err := Lookup(ctx, Options{CacheDir: dir, Only: []string{"grafana"}}); err == nil {
		t.Error("Lookup of an unknown set: no error")
	}
	if err := MissingError(dir, missing[:0]); !strings.Contains(err.Error(), dir) {
		t.Errorf("MissingError %v", err)
	}
}

var msFromRE = regexp.MustCompile(`(?m)^# From sigs\.k8s\.io/metrics-server@(v[0-9.]+) (manifests/\S+), unchanged below this header\.\n`)

// TestManifestsAreMetricsServers: every file of
// components/metrics-server/upstream names the version this package
// builds and, when that module is in the module cache, is the module's
// file byte for byte below its header.
func TestManifestsAreMetricsServers(t *testing.T) {
	modDir := ""
	if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		d := filepath.Join(strings.TrimSpace(string(out)), MetricsServerModule+"@"+MetricsServerVersion)
		if _, err := os.Stat(filepath.Join(d, "manifests")); err == nil {
			modDir = d
		}
	}
	ents, err := fs.ReadDir(deploykube.Manifests, "components/metrics-server/upstream")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		p := "components/metrics-server/upstream/" + e.Name()
		b, err := fs.ReadFile(deploykube.Manifests, p)
		if err != nil {
			t.Fatal(err)
		}
		m := msFromRE.FindSubmatchIndex(b)
		if m == nil || !strings.HasPrefix(string(b), "# Copyright The Kubernetes Authors.\n# Licensed under the Apache License, Version 2.0") {
			t.Errorf("%s: no licence header and From line", p)
			continue
		}
		if v := string(b[m[2]:m[3]]); v != MetricsServerVersion {
			t.Errorf("%s is from metrics-server %s; the image is %s", p, v, MetricsServerVersion)
		}
		if modDir == "" {
			continue
		}
		want, err := os.ReadFile(filepath.Join(modDir, string(b[m[4]:m[5]])))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if string(b[m[1]:]) != string(want) {
			t.Errorf("%s differs from the module's %s", p, b[m[4]:m[5]])
		}
	}
	if len(ents) != 4 {
		t.Errorf("%d files, want manifests/base's 4 (apiservice, deployment, rbac, service)", len(ents))
	}
	if modDir == "" {
		t.Logf("%s@%s is not in the module cache: compared headers only", MetricsServerModule, MetricsServerVersion)
	}
}
