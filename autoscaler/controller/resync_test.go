package controller_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// TestResync: two controllers over one store (two console pods sharing
// their state): what one writes, the other shows after Resync.
func TestResync(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	cfg := autoscaler.DefaultStepConfig()
	b, err := controller.New(controller.Options{
		Store: r.store, Target: r.fleet, Discovery: r.fleet, Scraper: r.fleet,
		Policy: controller.StepPolicy(cfg), StartupGrace: cfg.StartupGrace,
		Clock: r.clock, Tickers: r.tickers, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.c.SetMax(ctx, "root", "g", "a", 3); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Second)
	if _, err := r.c.SetCount(ctx, "root", "g", "a", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Zone("g", "a"); err == nil {
		t.Fatal("the second controller saw the zone before Resync")
	}
	if _, err := r.c.SetAutoRebalance("root", store.AutoRebalance{Enabled: true, Interval: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := b.Resync(); err != nil {
		t.Fatal(err)
	}
	want, _ := r.c.Zone("g", "a")
	got, err := b.Zone("g", "a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Count != 2 || got.MaxCount != 3 || !got.LastChange.Equal(want.LastChange) {
		t.Errorf("after Resync: %+v, want count 2 max 3 last change %s", got, want.LastChange)
	}
	if ar := b.AutoRebalance(); !ar.Enabled || ar.Interval != 2*time.Second {
		t.Errorf("after Resync the scheduler config is %+v", ar)
	}

	// And back: the second controller lowers max; the first follows.
	if _, err := b.SetMax(ctx, "root", "g", "a", 1); err != nil {
		t.Fatal(err)
	}
	if err := r.c.Resync(); err != nil {
		t.Fatal(err)
	}
	if z, _ := r.c.Zone("g", "a"); z.MaxCount != 1 || z.Count != 1 {
		t.Errorf("first controller after Resync: %+v, want max 1 count 1", z)
	}
}
