package render

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/reports"
)

// TestScreenshotLinks: the HTML report links the screenshots the index
// lists and that exist, and nothing else.
func TestScreenshotLinks(t *testing.T) {
	dir := t.TempDir()
	sdir := filepath.Join(dir, ScreenshotsDir)
	if err := os.MkdirAll(sdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadScreenshots(dir); err != nil || got != nil {
		t.Fatalf("no index: %v, %v; want none and no error", got, err)
	}
	for _, f := range []string{"zones.png", "audit.png"} {
		if err := os.WriteFile(filepath.Join(sdir, f), []byte("png"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteScreenshotIndex(sdir, []Screenshot{
		{File: "zones.png", Caption: "Zones and workers as a viewer"},
		{File: "audit.png", Caption: "Audit"},
		{File: "missing.png", Caption: "not taken"},
		{File: "../report.html", Caption: "outside"},
	}); err != nil {
		t.Fatal(err)
	}
	shots, err := ReadScreenshots(dir)
	if err != nil || len(shots) != 2 {
		t.Fatalf("ReadScreenshots: %v, %v; want zones.png and audit.png", shots, err)
	}
	var b bytes.Buffer
	if err := RenderHTML(&b, []*reports.Results{mustRead(t, "testdata/small.jsonl")}, Options{Screenshots: shots}); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{`<a href="screenshots/zones.png">zones.png</a>: Zones and workers as a viewer`, `href="screenshots/audit.png"`} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Contains(html, "missing.png") || strings.Contains(html, "report.html\"") {
		t.Error("the report links a screenshot that is not there")
	}
	if err := os.WriteFile(filepath.Join(sdir, ScreenshotIndex), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadScreenshots(dir); err == nil {
		t.Error("a broken index read without an error")
	}
}
