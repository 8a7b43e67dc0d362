package render

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/scaleproof/scaleproof/internal/skips"
	"github.com/scaleproof/scaleproof/reports"
)

// TestHTMLSelfContained checks the HTML report loads nothing at view time and
// has the charts it should: per scenario with load four (count, in flight,
// calls, latency), one (count) for a scenario without load.
func TestHTMLSelfContained(t *testing.T) {
	cases := []struct {
		name   string
		files  []string
		charts int
	}{
		{"one run", []string{"testdata/small.jsonl"}, 1 + 4 + 4},
		{"two runs", []string{"testdata/small.jsonl", "testdata/regressed.jsonl"}, 2 * (1 + 4 + 4)},
	}
	external := regexp.MustCompile(`(?i)<script|<link|<img|<iframe|@import|url\(|(src|href)\s*=`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var runs []*reports.Results
			for _, f := range c.files {
				runs = append(runs, mustRead(t, f))
			}
			var b bytes.Buffer
			if err := RenderHTML(&b, runs, Options{Published: true, Columns: AllColumns()}); err != nil {
				t.Fatal(err)
			}
			html := b.String()
			if m := external.FindString(html); m != "" {
				t.Errorf("the report references something external: %q", m)
			}
			for _, u := range regexp.MustCompile(`https?://[^"' )]+`).FindAllString(html, -1) {
				if u != "http://www.w3.org/2000/svg" && u != "http://www.w3.org/1999/xlink" {
					t.Errorf("a URL in the report: %s", u)
				}
			}
			if n := strings.Count(html, "<svg"); n != c.charts {
				t.Errorf("%d charts, want %d", n, c.charts)
			}
			if strings.Contains(html, "<?xml") {
				t.Error("an XML declaration is left inside the HTML")
			}
			for _, want := range []string{"<!doctype html>", "GKE", "Ours ÷ published", "draining", "up 1-&gt;3"} {
				if !strings.Contains(html, want) {
					t.Errorf("the report lacks %q", want)
				}
			}
		})
	}
}

// chromiumPath finds a Chromium to drive: $CHROMIUM, then chromium,
// chromium-headless, chromium-browser, google-chrome on $PATH.
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-headless", "chromium-browser", "headless-shell", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

type svgBox struct {
	Kind   string  `json:"kind"`
	W      float64 `json:"w"`
	H      float64 `json:"h"`
	Paths  int     `json:"paths"`
	Hidden bool    `json:"hidden"`
}

// TestHTMLInChromium opens the HTML report from disk in headless Chromium,
// checks that the page logs no console error and loads no resource, that
// every chart's <svg> is visible (a non-zero box, drawn lines inside), and
// saves a full-page PNG screenshot, browser-test-report.png, beside the page
// in $ARTIFACTS (else a temporary folder).
// Without a Chromium it skips, except under CI=true where it fails: install
// it with `make deps-chromium` (Debian's chromium).
//
// SCALEPROOF_RESULTS (a results file) renders that file instead of the
// hand-made one, e.g. to look at a real run's charts.
func TestHTMLInChromium(t *testing.T) {
	bin := chromiumPath()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no chromium binary found (tried $CHROMIUM, chromium, chromium-headless, chromium-browser, google-chrome) and CI=true: " +
				"install it with `make deps-chromium` (apt-get install -y --no-install-recommends chromium)")
		}
		skips.Skip(t, "no chromium binary found (tried $CHROMIUM, chromium, chromium-headless, chromium-browser, google-chrome): "+
			"install it with `make deps-chromium` to run the browser test")
	}
	dir := os.Getenv("ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := "testdata/small.jsonl"
	if s := os.Getenv("SCALEPROOF_RESULTS"); s != "" {
		src = s
	}
	var page bytes.Buffer
	if err := RenderHTML(&page, []*reports.Results{mustRead(t, src)}, Options{Published: true}); err != nil {
		t.Fatal(err)
	}
	wantCharts := strings.Count(page.String(), "<svg")
	htmlPath, err := filepath.Abs(filepath.Join(dir, "browser-test-report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(htmlPath, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Headless,
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1280, 900))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()

	// Collect the console from before the navigation until the checks end.
	cctx, ccancel := context.WithCancel(bctx)
	var mu sync.Mutex
	var consoleErrs []string
	messages := chromedp.Console(cctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				consoleErrs = append(consoleErrs, m.String())
				mu.Unlock()
			}
		}
	})
	if err := chromedp.Do(bctx, chromedp.Navigate("file://"+htmlPath)); err != nil {
		t.Fatalf("open %s in chromium %s: %v", htmlPath, bin, err)
	}
	boxes, err := chromedp.Run(bctx, chromedp.Evaluate[[]svgBox](`Array.from(document.querySelectorAll('figure.chart svg')).map(s => {
		const r = s.getBoundingClientRect(), cs = getComputedStyle(s);
		return {kind: s.closest('figure').dataset.kind, w: r.width, h: r.height,
			paths: s.querySelectorAll('path').length, hidden: cs.display === 'none' || cs.visibility !== 'visible' || cs.opacity === '0'};
	})`))
	if err != nil {
		t.Fatal(err)
	}
	resources, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`performance.getEntriesByType('resource').map(e => e.name)`))
	if err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "browser-test-report.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes); report: %s", shot, len(png), htmlPath)
	ccancel()
	wg.Wait()

	if len(boxes) != wantCharts || wantCharts == 0 {
		t.Errorf("the browser found %d charts, the file has %d", len(boxes), wantCharts)
	}
	for i, b := range boxes {
		if b.W <= 0 || b.H <= 0 || b.Hidden || b.Paths < 3 {
			t.Errorf("chart %d (%s) not visible: %+v", i, b.Kind, b)
		}
	}
	if len(resources) > 0 {
		t.Errorf("the page loaded resources: %v", resources)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(consoleErrs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(consoleErrs, "\n"))
	}
}

// Axis labels read "250", not "250.00" (gonum's default labels keep the
// trailing zeros of the finest tick).
func TestPlainTicks(t *testing.T) {
	for _, r := range [][2]float64{{0, 1000}, {0, 3.5}, {0, 250}, {0, 0.35}} {
		var labels []string
		for _, tk := range (plainTicks{}).Ticks(r[0], r[1]) {
			if tk.Label == "" {
				continue
			}
			labels = append(labels, tk.Label)
			if strings.Contains(tk.Label, ".") && strings.HasSuffix(tk.Label, "0") {
				t.Errorf("range %v: label %q keeps trailing zeros", r, tk.Label)
			}
		}
		if len(labels) < 2 {
			t.Errorf("range %v: labels %v, want at least two", r, labels)
		}
	}
}
