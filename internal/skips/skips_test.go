package skips

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRecord(t *testing.T) {
	log := filepath.Join(t.TempDir(), "skipped")
	t.Setenv(EnvLog, log)
	Record("TestA", "no chromium")
	Record("TestB/sub", "promtool not on PATH\n(make deps-prometheus)")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := "./internal/skips TestA: no chromium\n./internal/skips TestB/sub: promtool not on PATH (make deps-prometheus)\n"
	if string(b) != want {
		t.Fatalf("got %q, want %q", b, want)
	}
	t.Setenv(EnvLog, "")
	Record("TestC", "nothing written")
	if b2, _ := os.ReadFile(log); strings.Contains(string(b2), "TestC") {
		t.Fatal("recorded with the variable unset")
	}
}
