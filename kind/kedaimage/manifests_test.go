package kedaimage

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
)

var fromRE = regexp.MustCompile(`(?m)^# From github\.com/kedacore/keda/v2@(v[0-9.]+) (config/\S+), unchanged below this header\.\n`)

// TestManifestsAreKEDAs: every file of components/keda taken from KEDA
// names the version this package builds, and, when that module is in the
// module cache, is the module's file byte for byte below its header; so
// the manifests never drift from the binaries.
func TestManifestsAreKEDAs(t *testing.T) {
	modDir := ""
	if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		d := filepath.Join(strings.TrimSpace(string(out)), "github.com/kedacore/keda/v2@"+Version)
		if _, err := os.Stat(filepath.Join(d, "config")); err == nil {
			modDir = d
		}
	}
	n := 0
	err := fs.WalkDir(deploykube.Manifests, "components/keda", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "kustomization.yaml") || strings.HasSuffix(p, "LICENSE") {
			return err
		}
		b, err := fs.ReadFile(deploykube.Manifests, p)
		if err != nil {
			return err
		}
		m := fromRE.FindSubmatchIndex(b)
		if m == nil || !strings.HasPrefix(string(b), "# Copyright The KEDA Authors.\n# Licensed under the Apache License, Version 2.0") {
			t.Errorf("%s: no KEDA licence header and From line", p)
			return nil
		}
		n++
		if v := string(b[m[2]:m[3]]); v != Version {
			t.Errorf("%s is from KEDA %s; the images are %s", p, v, Version)
		}
		if modDir == "" {
			return nil
		}
		want, err := os.ReadFile(filepath.Join(modDir, string(b[m[4]:m[5]])))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			return nil
		}
		if string(b[m[1]:]) != string(want) {
			t.Errorf("%s differs from the module's %s", p, b[m[4]:m[5]])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Errorf("%d files from KEDA, want the 23 of config/default", n)
	}
	if modDir == "" {
		t.Logf("%s@%s is not in the module cache: compared headers only", Module, Version)
	}
}
