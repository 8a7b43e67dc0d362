package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/store"
	"github.com/scaleproof/scaleproof/internal/screenshot"
	"github.com/scaleproof/scaleproof/internal/skips"
)

// TestPagesInBrowser drives the pages in headless Chromium (one browser for
// every subtest): each role signs in and sees what the API lets it see; an
// admin sets max through the form and finds the audit entry; a viewer's
// forged post and a post without the CSRF token are refused and audited;
// the Zones page follows a worker's load without a reload; and a
// screenshot of each page goes to $ARTIFACTS (else a temporary folder).
// Without a Chromium it skips, except under CI=true where it fails.
func TestPagesInBrowser(t *testing.T) {
	bin := screenshot.Chromium()
	if bin == "" {
		why := "no chromium binary found (tried $CHROMIUM, " + strings.Join(screenshot.Names, ", ") + "): install it with `make deps-chromium`"
		if os.Getenv("CI") == "true" {
			t.Fatal(why + " (CI=true: the browser tests must run)")
		}
		skips.Skip(t, why+" to run the console's browser tests")
	}
	dir := os.Getenv("ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w := newWebRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, err := screenshot.Start(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	signIn := func(t *testing.T, caller string) *screenshot.Session {
		t.Helper()
		s, err := b.SignIn(w.srv.URL, keyOf[caller])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	eval := func(t *testing.T, s *screenshot.Session, js string) string {
		t.Helper()
		c, cancel := context.WithTimeout(s.Ctx(), 20*time.Second)
		defer cancel()
		v, err := chromedp.Run(c, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("evaluate %s: %v", js, err)
		}
		return v
	}
	open := func(t *testing.T, s *screenshot.Session, path string) {
		t.Helper()
		if err := s.Do(20*time.Second, chromedp.Navigate(s.URL(path)), chromedp.WaitVisible(chromedp.CSS("main"))); err != nil {
			t.Fatalf("open %s: %v", path, err)
		}
	}

	// A zone that scaled up under load, so the pages have something to show.
	two := 2
	if _, err := w.c.Apply(ctx, "ga", "g1", "a", controller.Change{Count: &two}); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(time.Minute)
	w.fleet.SetLoad("g1", "a", 28, 0)
	if _, err := w.c.Round(ctx, "g1", "a", "ga"); err != nil {
		t.Fatal(err)
	}
	w.fleet.SetLoad("g1", "b", 4, 0)
	if _, err := w.c.Round(ctx, "g1", "b", controller.ActorScheduler); err != nil {
		t.Fatal(err)
	}

	t.Run("each role sees what the API shows it", func(t *testing.T) {
		cases := []struct {
			caller                 string
			saveMax, workers, cols string // counts on the Zones page
			groupForms             string // forms on g1's Group page
		}{
			{"root", "3", "5", "6", "4"},
			{"ga", "2", "4", "6", "4"},
			{"v", "0", "0", "3", "0"},
			{"m", "0", "0", "3", "0"},
		}
		for _, c := range cases {
			s := signIn(t, c.caller)
			open(t, s, "/ui/zones")
			got := eval(t, s, `[document.querySelectorAll("button.save-max").length, document.querySelectorAll("li.worker").length,
				document.querySelectorAll("#zones thead th").length].join(",")`)
			if want := c.saveMax + "," + c.workers + "," + c.cols; got != want {
				t.Errorf("%s on Zones: save-max buttons, workers, columns = %s, want %s", c.caller, got, want)
			}
			if cnt := eval(t, s, `document.querySelector('tr[id="zone:g1/a"] .count').textContent`); cnt != "3" {
				t.Errorf("%s sees count %q for g1/a, want 3", c.caller, cnt)
			}
			open(t, s, "/ui/groups/g1")
			if n := eval(t, s, `String(document.querySelectorAll("main form").length)`); n != c.groupForms {
				t.Errorf("%s on Group g1: %s forms, want %s", c.caller, n, c.groupForms)
			}
		}
	})

	t.Run("an admin sets max through the form and finds the audit entry", func(t *testing.T) {
		s := signIn(t, "ga")
		open(t, s, "/ui/zones")
		row := `tr[id="zone:g1/b"] `
		if err := s.Do(20*time.Second,
			chromedp.SetValue(chromedp.CSS(row+`input[name="max_count"]`), "5"),
			chromedp.Click(chromedp.CSS(row+"button.save-max")),
			chromedp.WaitVisible(chromedp.CSS("p.flash")),
		); err != nil {
			t.Fatal(err)
		}
		if v, _ := w.c.Zone("g1", "b"); v.MaxCount != 5 {
			t.Fatalf("max of g1/b is %d after Save max 5", v.MaxCount)
		}
		open(t, s, "/ui/audit?actor=ga&group=g1&zone=b&action=workers.max_count")
		tags := eval(t, s, `Array.from(document.querySelectorAll("tr.audit-row")[0].querySelectorAll(".tag")).map(e => e.textContent).join(" ")`)
		if tags != "from:3 to:5" {
			t.Errorf("the audit page's newest max entry of g1/b by ga has tags %q, want from:3 to:5", tags)
		}
	})

	t.Run("an invalid count through the form is 422, shown and audited", func(t *testing.T) {
		s := signIn(t, "ga")
		open(t, s, "/ui/groups/g1")
		form := `section[id="zone:g1/b"] form.scale `
		if err := s.Do(10*time.Second, chromedp.SetValue(chromedp.CSS(form+`input[name="count"]`), "9")); err != nil {
			t.Fatal(err)
		}
		c, cancel := context.WithTimeout(s.Ctx(), 20*time.Second)
		defer cancel()
		res, err := chromedp.RunResponse(c, chromedp.Click(chromedp.CSS(form+"button.scale-workers")))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != 422 {
			t.Errorf("Scale workers with count 9 over max 5: %d, want 422", res.Status)
		}
		msg := eval(t, s, `document.getElementById("page-error").textContent + " | " + document.body.dataset.liveUrl`)
		if !strings.Contains(msg, "422") || !strings.Contains(msg, "count") || !strings.HasSuffix(msg, "| /ui/groups/g1") {
			t.Errorf("the page after the refusal says %q", msg)
		}
		if e := w.lastAudit(t); e.Actor != "ga" || e.Action != controller.AuditCount || e.Tags["error"] != "invalid" {
			t.Errorf("last audit entry %+v, want workers.count by ga with error:invalid", e)
		}
	})

	// post sends a form from the page with fetch, as a forged or stripped
	// form would, and returns the status.
	post := func(t *testing.T, s *screenshot.Session, path, fields string) string {
		return eval(t, s, fmt.Sprintf(`(async () => { const tok = document.querySelector('input[name="csrf"]').value;
			const body = new URLSearchParams(%s); if (body.get("csrf") === "TOKEN") body.set("csrf", tok);
			const r = await fetch(%q, {method: "POST", body, redirect: "manual"}); return String(r.status); })()`, fields, path))
	}
	refusal := func(t *testing.T, actor, action, detail string) {
		t.Helper()
		e := w.lastAudit(t)
		if e.Actor != actor || e.Action != action || e.Tags["error"] != "forbidden" || (detail != "" && e.Tags["detail"] != detail) {
			t.Errorf("last audit entry %+v, want %s by %s with error:forbidden %s", e, action, actor, detail)
		}
	}

	t.Run("a viewer's forged form post is 403 and audited", func(t *testing.T) {
		s := signIn(t, "v")
		open(t, s, "/ui/zones")
		if st := post(t, s, "/ui/groups/g1/zones/a/workers", `{csrf: "TOKEN", max_count: "9"}`); st != "403" {
			t.Fatalf("status %s, want 403", st)
		}
		refusal(t, "v", controller.AuditMaxCount, "viewer")
		if v, _ := w.c.Zone("g1", "a"); v.MaxCount != 3 {
			t.Errorf("max changed to %d", v.MaxCount)
		}
	})

	t.Run("a form without the CSRF token is refused", func(t *testing.T) {
		s := signIn(t, "ga")
		open(t, s, "/ui/groups/g1")
		if st := post(t, s, "/ui/groups/g1/zones/a/rebalance", `{back: "group"}`); st != "403" {
			t.Fatalf("status %s, want 403", st)
		}
		refusal(t, "ga", controller.AuditRebalance, "csrf")
		if st := post(t, s, "/ui/groups/g1/zones/a/workers", `{csrf: "not-the-token", count: "1"}`); st != "403" {
			t.Fatalf("wrong token: status %s, want 403", st)
		}
		refusal(t, "ga", controller.AuditCount, "csrf")
	})

	t.Run("the Zones page follows a worker's load without a reload", func(t *testing.T) {
		s := signIn(t, "ga")
		open(t, s, "/ui/zones")
		eval(t, s, `window.notReloaded = "yes"; ""`)
		w.clock.Advance(20 * time.Second) // then the load: calls come in over time, not before it
		w.fleet.SetLoad("g1", "b", 31, 640)
		c, cancel := context.WithTimeout(s.Ctx(), 15*time.Second)
		defer cancel()
		got, err := chromedp.Run(c, chromedp.Poll[string](`(() => { const t = document.querySelector('tr[id="zone:g1/b"] .inflight');
			return t && t.textContent === "31 / 32" && window.notReloaded === "yes" ? document.querySelector('tr[id="zone:g1/b"] .rate').textContent : false; })()`,
			chromedp.WithPollingInterval(100*time.Millisecond)))
		if err != nil {
			t.Fatalf("the Zones page did not show 31 / 32 in flight for g1/b without a reload: %v", err)
		}
		if got != "32.0" {
			t.Errorf("calls/s %q after 640 calls in 20 s, want 32.0", got)
		}

		// A zone created meanwhile appears; the row being typed in stays as typed.
		in := `tr[id="zone:g1/a"] input[name="max_count"]`
		if err := s.Do(10*time.Second, chromedp.SetValue(chromedp.CSS(in), "7"), chromedp.Focus(chromedp.CSS(in))); err != nil {
			t.Fatal(err)
		}
		one, four := 1, 4
		if _, err := w.c.Apply(ctx, "ga", "g1", "c", controller.Change{Count: &one, MaxCount: &four}); err != nil {
			t.Fatal(err)
		}
		c2, cancel2 := context.WithTimeout(s.Ctx(), 15*time.Second)
		defer cancel2()
		typed, err := chromedp.Run(c2, chromedp.Poll[string](`(() => document.getElementById("zone:g1/c") && window.notReloaded === "yes" ?
			document.querySelector('tr[id="zone:g1/a"] input[name="max_count"]').value : false)()`, chromedp.WithPollingInterval(100*time.Millisecond)))
		if err != nil {
			t.Fatalf("zone g1/c did not appear on the open Zones page: %v", err)
		}
		if typed != "7" {
			t.Errorf("the max being typed in g1/a's row is %q after a refresh, want 7", typed)
		}
	})

	t.Run("screenshots of each page", func(t *testing.T) {
		w.fleet.SetLoad("g1", "a", 26, 0)
		two := 2
		if _, err := w.c.Apply(ctx, "root", "g2", "a", controller.Change{Count: &two}); err != nil {
			t.Fatal(err)
		}
		root, viewer := signIn(t, "root"), signIn(t, "v")
		shots := []struct {
			s          *screenshot.Session
			file, path string
		}{
			{root, "console-zones-admin.png", "/ui/zones"},
			{root, "console-group-g1.png", "/ui/groups/g1"},
			{root, "console-audit.png", "/ui/audit"},
			{root, "console-config.png", "/ui/config"},
			{viewer, "console-zones-viewer.png", "/ui/zones"},
			{viewer, "console-group-g1-viewer.png", "/ui/groups/g1"},
		}
		for _, sh := range shots {
			png, err := sh.s.Shot(sh.path)
			if err != nil {
				t.Fatal(err)
			}
			if len(png) < 1000 || string(png[1:4]) != "PNG" {
				t.Fatalf("%s: not a PNG (%d bytes)", sh.file, len(png))
			}
			p := filepath.Join(dir, sh.file)
			if err := os.WriteFile(p, png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot %s (%d bytes)", p, len(png))
		}
		if es, _ := w.store.Audit(store.AuditQuery{Action: controller.AuditMaxCount, Limit: 1}); len(es) == 0 {
			t.Error("no max entry in the audit log")
		}
	})
}
