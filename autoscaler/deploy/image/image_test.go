package image_test

import (
	"archive/tar"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/scaleproof/scaleproof/autoscaler/deploy/image"
)

func TestTag(t *testing.T) {
	for _, tc := range []struct {
		version, want string
		bin           []byte
		wantErr       bool
	}{
		{version: "v0.3.1", want: image.Repository + ":v0.3.1"},
		{version: "", bin: []byte("abc"), want: image.Repository + ":sha-ba7816bf8f01"},
		{version: "latest", wantErr: true},
		{version: "-x", wantErr: true},
		{version: "a/b", wantErr: true},
		{version: strings.Repeat("a", 129), wantErr: true},
	} {
		got, err := image.Tag(tc.version, tc.bin)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("Tag(%q) = %q, %v; want %q, error %v", tc.version, got, err, tc.want, tc.wantErr)
		}
	}
}

// readBack checks the archive the way a node's runtime reads it: the
// manifest's RepoTags, the config, and the one layer's files.
func readBack(t *testing.T, path, ref string, bin []byte, extra ...image.File) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	var manifest []struct{ RepoTags []string }
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "manifest.json" {
			if err := json.NewDecoder(tr).Decode(&manifest); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(manifest) != 1 || !slices.Equal(manifest[0].RepoTags, []string{ref}) {
		t.Fatalf("manifest.json RepoTags = %+v, want exactly [%s]", manifest, ref)
	}

	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{image.Entrypoint}) || cf.Config.User != image.User || cf.OS != "linux" {
		t.Errorf("config: entrypoint %q user %q os %q", cf.Config.Entrypoint, cf.Config.User, cf.OS)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d, %v; want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	lt := tar.NewReader(rc)
	files := map[string]*tar.Header{}
	for {
		h, err := lt.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
		if h.Name == strings.TrimPrefix(image.Entrypoint, "/") {
			got, _ := io.ReadAll(lt)
			if string(got) != string(bin) {
				t.Errorf("binary in the layer differs (%d bytes, want %d)", len(got), len(bin))
			}
		}
		for _, x := range extra {
			if h.Name == strings.TrimPrefix(x.Path, "/") {
				got, _ := io.ReadAll(lt)
				if string(got) != string(x.Body) || h.Mode&0o111 == 0 {
					t.Errorf("%s in the layer differs (%d bytes, want %d) or is not executable (%o)", x.Path, len(got), len(x.Body), h.Mode)
				}
			}
		}
	}
	ep := files[strings.TrimPrefix(image.Entrypoint, "/")]
	if ep == nil || ep.Mode&0o111 == 0 || ep.Uid != 0 || ep.ModTime.Unix() != 0 {
		t.Errorf("entrypoint header = %+v", ep)
	}
	if len(files) != 2+len(extra) || files["tmp/"] == nil {
		t.Errorf("layer files = %v, want tmp/, the binary and the extra files only", slices.Sorted(func(yield func(string) bool) {
			for k := range files {
				if !yield(k) {
					return
				}
			}
		}))
	}
}

func TestWriteReadBack(t *testing.T) {
	dir := t.TempDir()
	bin := []byte("\x7fELF not really")
	ref, err := image.Tag("", bin)
	if err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	for _, p := range []string{a, b} {
		if err := image.Write(p, ref, bin); err != nil {
			t.Fatal(err)
		}
	}
	readBack(t, a, ref, bin)
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if string(ab) != string(bb) {
		t.Error("the same binary and tag gave different archives")
	}
	if err := image.Write(filepath.Join(dir, "c.tar"), ref, nil); err == nil {
		t.Error("an empty binary was accepted")
	}
	if err := image.Write(filepath.Join(dir, "d.tar"), "Not A Tag!", bin); err == nil {
		t.Error("a bad reference was accepted")
	}
}

// TestBuild compiles the real binary and checks it is static and tagged.
func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles scaleproof-ref")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ref.tar")
	res, err := image.Build(context.Background(), image.BuildOptions{ModuleDir: root, Version: "test-1", Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ref != image.Repository+":test-1" || res.Archive != out {
		t.Fatalf("result = %+v", res)
	}
	ef, err := elf.Open(res.Binary)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has an ELF interpreter: not static")
		}
	}
	bin, err := os.ReadFile(res.Binary)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := os.ReadFile(filepath.Join(filepath.Dir(res.Binary), "scaleproof"))
	if err != nil {
		t.Fatal(err)
	}
	if err := image.CheckStatic(sp); err != nil {
		t.Error(err)
	}
	readBack(t, out, res.Ref, bin, image.File{Path: image.ScaleproofPath, Body: sp})
}

// TestWriteExtra: the scaleproof binary beside scaleproof-ref, both in the
// tag's hash; a bad extra path is refused.
func TestWriteExtra(t *testing.T) {
	dir := t.TempDir()
	ref, sp := []byte("\x7fELF ref"), []byte("\x7fELF scaleproof")
	tag1, _ := image.Tag("", ref)
	tag2, _ := image.Tag("", ref, sp)
	if tag1 == tag2 {
		t.Errorf("the tag does not change with the second binary: %s", tag1)
	}
	x := image.File{Path: image.ScaleproofPath, Body: sp}
	p := filepath.Join(dir, "a.tar")
	if err := image.Write(p, tag2, ref, x); err != nil {
		t.Fatal(err)
	}
	readBack(t, p, tag2, ref, x)
	for _, bad := range []image.File{{Path: "scaleproof", Body: sp}, {Path: "/a/b", Body: sp}, {Path: image.Entrypoint, Body: sp}, {Path: "/x"}} {
		if err := image.Write(filepath.Join(dir, "b.tar"), tag2, ref, bad); err == nil {
			t.Errorf("extra %q (%d bytes) accepted", bad.Path, len(bad.Body))
		}
	}
}

func TestCheckStatic(t *testing.T) {
	if err := image.CheckStatic([]byte("#!/bin/sh\n")); err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Errorf("a script: %v", err)
	}
	self, err := os.Executable() // the test binary: static or not, CheckStatic must agree with its ELF header
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	dynamic := false
	for _, p := range ef.Progs {
		dynamic = dynamic || p.Type == elf.PT_INTERP
	}
	if err := image.CheckStatic(b); (err != nil) != dynamic {
		t.Errorf("CheckStatic = %v for a binary with interpreter %v", err, dynamic)
	}
}
