package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/internal/screenshot"
	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// consolePagesLine is what run prints once the platform is up, so a user
// can watch the zones scale in a browser: the pages' address and a viewer
// key (a viewer sees the counts only and can change nothing).
func consolePagesLine(ep platform.Endpoints) string {
	return fmt.Sprintf("watch the zones scale: open %s/ui/ and sign in with the viewer key %s",
		strings.TrimRight(ep.ConsoleURL, "/"), ep.Keys.Viewer.Key)
}

// runScreenshots signs in to the console's pages with the run's keys and
// saves a PNG of each page in dir/screenshots (with an index the HTML report
// links), within 2 minutes; an interrupt (ctx) stops it. Without a Chromium
// it says so in one line and takes none.
func runScreenshots(ctx context.Context, ep platform.Endpoints, dir string, log *slog.Logger, say func(string, ...any)) {
	bin := screenshot.Chromium()
	if bin == "" {
		say("screenshots: skipped: no chromium found (install it with `make deps-chromium`, or set $CHROMIUM)")
		return
	}
	k := ep.Keys
	pages := []screenshot.Page{
		{File: "zones-viewer.png", Path: "/ui/zones", Key: k.Viewer.Key,
			Caption: "Zones and workers as a viewer sees it at the end of the run: the count of each group × zone, nothing else"},
		{File: "zones-admin.png", Path: "/ui/zones", Key: k.GroupAdmin.Key,
			Caption: "Zones and workers as the group admin sees it: live workers (in flight / limit, calls/s, ready), Max workers with Save max, the last decision"},
		{File: "group.png", Path: "/ui/groups/" + ep.Group, Key: k.GroupAdmin.Key,
			Caption: "the Group page of " + ep.Group + ": each zone's count, max, last decision (holds included) and zone actions"},
		{File: "audit.png", Path: "/ui/audit", Key: k.SuperAdmin.Key,
			Caption: "the Audit page: the run's scale changes, max changes and refusals with their actors and tags"},
		{File: "config.png", Path: "/ui/config", Key: k.SuperAdmin.Key,
			Caption: "the Config page: the Auto-rebalance scheduler and the step policy's settings"},
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	sdir := filepath.Join(dir, reports.ScreenshotsDir)
	shots, err := screenshot.Capture(ctx, bin, ep.ConsoleURL, pages, sdir)
	if err != nil {
		log.Warn("screenshots", "err", err)
		say("screenshots: %d of %d taken: %v", len(shots), len(pages), err)
		return
	}
	say("screenshots: %d pages of the console in %s", len(shots), sdir)
}
