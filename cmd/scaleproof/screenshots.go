package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/scaleproof/scaleproof/internal/screenshot"
	"github.com/scaleproof/scaleproof/reports/render"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// consolePagesLine is what run prints once the platform is up, so a user
// can watch the zones scale in a browser: the pages' address and, when
// stderr is a terminal (onTTY), a viewer key (a viewer sees the counts only
// and can change nothing). Off a terminal the key is left out: stderr is
// then a CI log, often published, and the key is live until the teardown,
// as the run keeps every key out of its artifacts.
func consolePagesLine(ep platform.Endpoints, onTTY bool) string {
	url := strings.TrimRight(ep.ConsoleURL, "/") + "/ui/"
	if !onTTY {
		return fmt.Sprintf("watch the zones scale: open %s and sign in with a viewer key (printed on a terminal only; scaleproof up prints every key)", url)
	}
	return fmt.Sprintf("watch the zones scale: open %s and sign in with the viewer key %s", url, ep.Keys.Viewer.Key)
}

// shooter takes the run's screenshots of the console's pages into
// dir/screenshots: two while the sustained scenario runs at its max under
// load (underLoad, from the progress updates), the rest after the scenarios
// (end), and the index the HTML report links. Without a Chromium it takes
// none and says so once.
type shooter struct {
	ep  platform.Endpoints
	dir string
	log *slog.Logger
	say func(string, ...any)
	bin string

	once  sync.Once
	wg    sync.WaitGroup
	mu    sync.Mutex
	shots []render.Screenshot
	errs  []string
}

func newShooter(ep platform.Endpoints, dir string, log *slog.Logger, say func(string, ...any)) *shooter {
	s := &shooter{ep: ep, dir: filepath.Join(dir, render.ScreenshotsDir), log: log, say: say, bin: screenshot.Chromium()}
	if s.bin == "" {
		say("screenshots: skipped: no chromium found (install it with `make deps-chromium`, or set $CHROMIUM)")
	}
	return s
}

// capture takes pages within 2 minutes (an interrupt, ctx, stops it).
func (s *shooter) capture(parent context.Context, pages []screenshot.Page) {
	ctx, cancel := context.WithTimeout(parent, 2*time.Minute)
	defer cancel()
	shots, err := screenshot.Capture(ctx, s.bin, s.ep.ConsoleURL, pages, s.dir)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shots = append(s.shots, shots...)
	switch {
	case err == nil:
	case errors.Is(err, context.Canceled) || parent.Err() != nil:
		// Ctrl-C: one word for all the pages it stopped
		if !slices.Contains(s.errs, "interrupted") {
			s.errs = append(s.errs, "interrupted")
		}
	default:
		s.log.Warn("screenshots", "err", err)
		s.errs = append(s.errs, err.Error())
	}
}

// underLoad takes the Zones and Group pages once, in the background, the
// first time the sustained scenario is at its max (above 1) with every
// worker ready and its VUs on.
func (s *shooter) underLoad(ctx context.Context, st scenarios.Status) {
	if s.bin == "" || st.Scenario != "sustained" || st.VUs == 0 || st.Max < 2 || st.Count != st.Max || st.Ready != st.Max {
		return
	}
	s.once.Do(func() {
		k := s.ep.Keys.GroupAdmin.Key
		s.wg.Go(func() {
			s.capture(ctx, []screenshot.Page{
				{File: "zones-under-load.png", Path: "/ui/zones", Key: k,
					Caption: fmt.Sprintf("Zones and workers during the sustained scenario, at its max of %d under load: each worker's in flight / limit and calls/s, and the decision that held at the max", st.Max)},
				{File: "group-under-load.png", Path: "/ui/groups/" + s.ep.Group, Key: k,
					Caption: "the Group page at the same moment: count, max, the last decision and the last scale (the step up), the live workers and the zone actions"},
			})
		})
	})
}

// end waits for the under-load pictures, takes the end-of-run ones and
// writes the index.
func (s *shooter) end(ctx context.Context) {
	s.wg.Wait()
	if s.bin == "" {
		return
	}
	if ctx.Err() == nil { // not after an interrupt
		s.endPages(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.shots) > 0 {
		if err := render.WriteScreenshotIndex(s.dir, s.shots); err != nil {
			s.errs = append(s.errs, err.Error())
		}
	}
	if len(s.errs) > 0 {
		s.say("screenshots: %d taken; %s", len(s.shots), strings.Join(s.errs, "; "))
		return
	}
	s.say("screenshots: %d pages of the console in %s", len(s.shots), s.dir)
}

// endPages are the pictures after the scenarios.
func (s *shooter) endPages(ctx context.Context) {
	k := s.ep.Keys
	s.capture(ctx, []screenshot.Page{
		{File: "zones-viewer.png", Path: "/ui/zones", Key: k.Viewer.Key,
			Caption: "Zones and workers as a viewer sees it at the end of the run: the count of each group × zone, nothing else"},
		{File: "zones-admin.png", Path: "/ui/zones", Key: k.GroupAdmin.Key,
			Caption: "Zones and workers as the group admin sees it at the end: live workers (in flight / limit, calls/s, ready), Max workers with Save max, the last decision"},
		{File: "group.png", Path: "/ui/groups/" + s.ep.Group, Key: k.GroupAdmin.Key,
			Caption: "the Group page of " + s.ep.Group + " at the end: each zone's count, max, last decision (holds included) and zone actions"},
		{File: "audit.png", Path: "/ui/audit", Key: k.SuperAdmin.Key,
			Caption: "the Audit page: the run's scale changes, max changes and refusals with their actors and tags"},
		{File: "config.png", Path: "/ui/config", Key: k.SuperAdmin.Key,
			Caption: "the Config page: the Auto-rebalance scheduler and the step policy's settings"},
	})
}
