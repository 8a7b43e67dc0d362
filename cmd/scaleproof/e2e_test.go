package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/internal/screenshot"
	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/reports/render"
)

// buildBinaries builds scaleproof and scaleproof-ref (without -race: they are
// the system under test and the harness as users run them) into dir.
func buildBinaries(t *testing.T, dir string) (harness, ref string) {
	t.Helper()
	for _, b := range []struct{ out, pkg string }{
		{"scaleproof", "github.com/scaleproof/scaleproof/cmd/scaleproof"},
		{"scaleproof-ref", "github.com/scaleproof/scaleproof/cmd/scaleproof-ref"},
	} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b.out), b.pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	return filepath.Join(dir, "scaleproof"), filepath.Join(dir, "scaleproof-ref")
}

// TestQuickProfileOnLocal is the end-to-end run `make run` does: the
// reference system as local processes, the five scenarios with 64 VUs at the
// quick profile, the table and a results file. It asserts the verdicts and
// the shape of the results, not wall-clock figures.
func TestQuickProfileOnLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run skipped in -short mode")
	}
	dir := t.TempDir()
	harness, ref := buildBinaries(t, dir)
	art := filepath.Join(dir, "artifacts")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, harness, "run", "--platform", "local", "--profile", "quick",
		"--ref-bin", ref, "--artifacts", art, "--json", "--quiet")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	dumpOnFailure := func() {
		t.Logf("stderr:\n%s", stderr.String())
		t.Logf("stdout:\n%s", stdout.String())
		logs, _ := filepath.Glob(filepath.Join(art, "logs", "*.log"))
		for _, l := range logs {
			if b, err := os.ReadFile(l); err == nil && len(b) > 0 {
				if len(b) > 4000 {
					b = b[len(b)-4000:]
				}
				t.Logf("%s (tail):\n%s", filepath.Base(l), b)
			}
		}
	}
	if err != nil {
		dumpOnFailure()
		t.Fatalf("scaleproof run: %v", err)
	}
	var out struct {
		Row      reports.Row       `json:"row"`
		Verdicts []reports.Verdict `json:"verdicts"`
		Results  string            `json:"results"`
		ExitCode int               `json:"exit_code"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		dumpOnFailure()
		t.Fatalf("decode --json output: %v", err)
	}
	if len(out.Verdicts) != 5 {
		t.Fatalf("got %d verdicts, want 5", len(out.Verdicts))
	}
	for _, v := range out.Verdicts {
		if !v.Passed {
			t.Errorf("scenario %s failed: %+v", v.Scenario, v)
		}
	}
	if out.Row.UpTo3S <= 0 || out.Row.BackTo1S <= out.Row.UpTo3S {
		t.Errorf("table row times: up to 3 %.1f s, back to 1 %.1f s", out.Row.UpTo3S, out.Row.BackTo1S)
	}
	if out.Row.Calls.OK == 0 || out.Row.Calls.TooMany == 0 || out.Row.Calls.Server5xx != 0 {
		t.Errorf("calls: %+v (want ok > 0, 429 > 0 from max 1, 5xx = 0)", out.Row.Calls)
	}
	res, err := reports.Read(out.Results)
	if err != nil {
		t.Fatalf("read results: %v", err)
	}
	if res.Incomplete || len(res.Verdicts) != 5 || len(res.Seconds) == 0 || len(res.Events) == 0 {
		t.Errorf("results file: incomplete=%v verdicts=%d seconds=%d events=%d", res.Incomplete, len(res.Verdicts), len(res.Seconds), len(res.Events))
	}
	checkArtifacts(t, art)
	t.Logf("table row: up to 3 %.0f s, back to 1 %.0f s, ok %d, 429 %d, 5xx %d",
		out.Row.UpTo3S, out.Row.BackTo1S, out.Row.Calls.OK, out.Row.Calls.TooMany, out.Row.Calls.Server5xx)
	if t.Failed() {
		dumpOnFailure()
	}
}

// checkArtifacts checks the artifacts folder of a completed local run: one
// copy of the process logs, complete with their shutdown lines; no API key
// anywhere under it; no duplicate keys in the harness's log lines; table.md's verdict
// lines kept apart when the Markdown is rendered.
func checkArtifacts(t *testing.T, art string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(art, "local", "logs")); err == nil {
		t.Error("local/logs exists: the process logs are kept twice")
	}
	for _, name := range []string{"console.log", "edge.log"} {
		b, err := os.ReadFile(filepath.Join(art, "logs", name))
		if err != nil || !bytes.Contains(b, []byte("drained, exiting")) {
			t.Errorf("logs/%s lacks its shutdown line (%v)", name, err)
		}
	}
	for _, f := range secretsUnder(t, art) {
		t.Errorf("a secret under the artifacts folder (it is published): %s", f)
	}
	log, err := os.ReadFile(filepath.Join(art, "scaleproof.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range bytes.Split(log, []byte("\n")) {
		if bytes.Count(l, []byte(`"part":`)) > 1 {
			t.Errorf("scaleproof.log line with a duplicate key: %s", l)
			break
		}
	}
	if screenshot.Chromium() != "" { // the console's pages (two under load in sustained), linked from the report
		shots, err := render.ReadScreenshots(art)
		html, _ := os.ReadFile(filepath.Join(art, "report.html"))
		if err != nil || len(shots) != 7 || !bytes.Contains(html, []byte(`href="screenshots/zones-under-load.png"`)) ||
			!bytes.Contains(html, []byte(`href="screenshots/zones-viewer.png"`)) {
			t.Errorf("screenshots: %d (%v), want 7 linked from report.html", len(shots), err)
		}
	}
	md, err := os.ReadFile(filepath.Join(art, "table.md"))
	if err != nil || !bytes.Contains(md, []byte("```text\nPASS  ")) {
		t.Errorf("table.md: the verdict lines must sit in a code block, not merge into one paragraph: %v\n%s", err, md)
	}
}

// apiKey matches the reference system's API keys as the local platform
// makes them (local.randKey: role prefix, "_", 32 hex digits).
var apiKey = regexp.MustCompile(`\b(sa|ga|vw|mcp)_[0-9a-f]{32}\b`)

// secretsUnder walks dir and returns "path: what" for every file that holds
// an API key or a keys file. The artifacts folder is made to be shared (the
// nightly uploads it), so no secret may be written under it.
func secretsUnder(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	files := 0
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		files++
		if e.Name() == "keys.json" {
			found = append(found, p+": a keys file")
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if m := apiKey.Find(b); m != nil {
			found = append(found, fmt.Sprintf("%s: %.8s…", p, m))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatalf("no file under %s: nothing was scanned", dir)
	}
	return found
}
