package hostsetup

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUlimits(t *testing.T) {
	const inf = ^uint64(0)
	for _, tc := range []struct {
		name                  string
		nofileHard, nprocHard uint64
		wantNofile, wantNproc uint64
	}{
		{"this VM", 20000, 96365, 20000, 32768},
		{"low nproc", 20000, 4096, 20000, 4096},
		{"unlimited", inf, inf, NofileCap, NprocCap},
		{"at the cap", 1048576, 32768, 1048576, 32768},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nf, np := Ulimits(tc.nofileHard, tc.nprocHard)
			if nf != tc.wantNofile || np != tc.wantNproc {
				t.Fatalf("Ulimits(%d, %d) = %d, %d; want %d, %d", tc.nofileHard, tc.nprocHard, nf, np, tc.wantNofile, tc.wantNproc)
			}
		})
	}
}

func TestContainersConf(t *testing.T) {
	c := ContainersConf(20000, 4096)
	for _, want := range []string{`"nofile=20000:20000"`, `"nproc=4096:4096"`, `runtime = "runc"`, "[engine]", "[containers]"} {
		if !strings.Contains(c, want) {
			t.Errorf("conf lacks %s:\n%s", want, c)
		}
	}
	if !strings.HasPrefix(c, Marker) {
		t.Errorf("conf does not start with the marker")
	}
}

func TestWriteConfIdempotentAndKeepsForeign(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "containers", "containers.conf")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("[engine]\nruntime = \"crun\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := ContainersConf(100, 200)
	wrote, err := WriteConf(p, want, io.Discard)
	if err != nil || !wrote {
		t.Fatalf("first write: wrote=%v err=%v", wrote, err)
	}
	if b, _ := os.ReadFile(p + ".before-scaleproof"); !strings.Contains(string(b), "crun") {
		t.Fatalf("the foreign conf was not kept: %q", b)
	}
	wrote, err = WriteConf(p, want, io.Discard)
	if err != nil || wrote {
		t.Fatalf("second write: wrote=%v err=%v (want no write)", wrote, err)
	}
	// a conf of ours with other limits is replaced without a backup of it
	if err := os.Remove(p + ".before-scaleproof"); err != nil {
		t.Fatal(err)
	}
	if wrote, err = WriteConf(p, ContainersConf(300, 400), io.Discard); err != nil || !wrote {
		t.Fatalf("update: wrote=%v err=%v", wrote, err)
	}
	if _, err := os.Stat(p + ".before-scaleproof"); err == nil {
		t.Fatalf("our own conf was backed up")
	}
}
