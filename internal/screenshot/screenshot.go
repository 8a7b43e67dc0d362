// Package screenshot drives a headless Chromium (Debian's chromium, through
// chromedp) to sign in to the console's web pages with an API key and take
// PNG screenshots of them: for a run's artifacts (Capture) and for the
// pages' browser tests (Start, SignIn, Session).
//
// It starts a browser process, so it stays out of the pure packages: only
// cmd/ and tests import it. Must not import scenarios/ or autoscaler/.
package screenshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/scaleproof/scaleproof/reports/render"
)

// Names tried on $PATH by Chromium, after $CHROMIUM.
var Names = []string{"chromium", "chromium-headless", "chromium-browser", "headless-shell", "google-chrome"}

// Chromium returns the Chromium to drive: $CHROMIUM, then the first of
// Names on $PATH; "" when there is none (install Debian's with
// `make deps-chromium`).
func Chromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, n := range Names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// Width and Height are the browser window's size in CSS pixels.
const (
	Width  = 1280
	Height = 860
)

// Browser is one headless Chromium process.
type Browser struct {
	ctx    context.Context // a chromedp context whose browser runs
	cancel func()
}

// Start launches Chromium bin headless (no sandbox, no GPU, no background
// networking) and waits until it answers. It ends when ctx ends or on Close.
func Start(ctx context.Context, bin string) (*Browser, error) {
	if bin == "" {
		return nil, errors.New("screenshot: no chromium (install it with `make deps-chromium`, or set $CHROMIUM)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Headless,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-background-networking", true),
		chromedp.WindowSize(Width, Height))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		bcancel()
		acancel()
		return nil, fmt.Errorf("screenshot: start %s: %w", bin, err)
	}
	return &Browser{ctx: bctx, cancel: func() { bcancel(); acancel() }}, nil
}

// Close ends the browser.
func (b *Browser) Close() { b.cancel() }

// Session is one tab signed in to a console, in a browser context of its own
// (its own cookies), so sessions of different keys do not mix.
type Session struct {
	ctx    context.Context
	cancel context.CancelFunc
	base   string
}

// Tab opens a tab in a new browser context with nothing signed in.
func (b *Browser) Tab(base string) (*Session, error) {
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		cancel()
		return nil, fmt.Errorf("screenshot: open a tab: %w", err)
	}
	return &Session{ctx: ctx, cancel: cancel, base: strings.TrimRight(base, "/")}, nil
}

// SignIn opens a tab and signs in to the console at base (its pages are
// base/ui/) with key, as a person would: the sign-in form, then the Zones
// page.
func (b *Browser) SignIn(base, key string) (*Session, error) {
	s, err := b.Tab(base)
	if err != nil {
		return nil, err
	}
	if err := s.Do(30*time.Second,
		chromedp.Navigate(s.base+"/ui/signin"),
		chromedp.SendKeys(chromedp.ID("key"), key),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.CSS("header nav")),
	); err != nil {
		s.Close()
		return nil, fmt.Errorf("screenshot: sign in to %s: %w", base, err)
	}
	return s, nil
}

// Ctx is the session's chromedp context, for more actions.
func (s *Session) Ctx() context.Context { return s.ctx }

// URL is base + path.
func (s *Session) URL(path string) string { return s.base + path }

// Do runs actions in the tab, bounded by timeout.
func (s *Session) Do(timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	return chromedp.Do(ctx, steps...)
}

// Shot opens path (e.g. "/ui/zones") and returns a full-page PNG.
func (s *Session) Shot(path string) ([]byte, error) {
	if err := s.Do(30*time.Second, chromedp.Navigate(s.URL(path)), chromedp.WaitVisible(chromedp.CSS("main"))); err != nil {
		return nil, fmt.Errorf("screenshot: open %s: %w", path, err)
	}
	return s.Current()
}

// Current returns a full-page PNG of the page as it is now.
func (s *Session) Current() ([]byte, error) {
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return nil, fmt.Errorf("screenshot: capture: %w", err)
	}
	return png, nil
}

// Close closes the tab and its browser context.
func (s *Session) Close() { s.cancel() }

// Page is one screenshot Capture takes: Path (under the console's base)
// signed in with Key, saved as File with Caption.
type Page struct {
	File, Path, Key, Caption string
}

// Capture signs in with each page's key (once per key) and saves each page
// as a PNG in dir. It returns the screenshots taken, for dir's index
// (render.WriteScreenshotIndex); a page that fails is left out and its
// error joined to the others.
func Capture(ctx context.Context, bin, base string, pages []Page, dir string) ([]render.Screenshot, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	b, err := Start(ctx, bin)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	sessions := map[string]*Session{}
	defer func() {
		for _, s := range sessions {
			s.Close()
		}
	}()
	var shots []render.Screenshot
	var errs []error
	for _, p := range pages {
		s := sessions[p.Key]
		if s == nil {
			if s, err = b.SignIn(base, p.Key); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p.File, err))
				continue
			}
			sessions[p.Key] = s
		}
		png, err := s.Shot(p.Path)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, p.File), png, 0o644)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.File, err))
			continue
		}
		shots = append(shots, render.Screenshot{File: p.File, Caption: p.Caption})
	}
	return shots, errors.Join(errs...)
}
