package controller_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/controller/controllertest"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// BenchmarkPass10k measures one scheduler pass over 10,000 group × zones
// (100 groups × 100 zones, 2 workers each) with a fake platform: discovery,
// two scrapes and the step policy per zone, and the holds written to the
// store in one transaction.
func BenchmarkPass10k(b *testing.B) {
	ctx := context.Background()
	clock := controllertest.NewClock(t0)
	fl := controllertest.NewFleet(clock)
	fl.SetRecord(false)
	st, err := store.Open(filepath.Join(b.TempDir(), "state.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var zones []store.Zone
	for g := range 100 {
		for z := range 100 {
			gn, zn := fmt.Sprintf("g%d", g), fmt.Sprintf("z%d", z)
			zones = append(zones, store.Zone{Group: gn, Zone: zn, Count: 2, MaxCount: 3, LastChange: t0, Created: t0})
			if err := fl.Scale(ctx, gn, zn, 2, nil); err != nil {
				b.Fatal(err)
			}
			fl.SetLoad(gn, zn, 10, 0) // 31 %: neither high nor low, so every zone holds
		}
	}
	if _, err := st.Commit(zones, nil); err != nil {
		b.Fatal(err)
	}
	cfg := autoscaler.DefaultStepConfig()
	c, err := controller.New(controller.Options{
		Store: st, Target: fl, Discovery: fl, Scraper: fl,
		Policy: controller.StepPolicy(cfg), StartupGrace: cfg.StartupGrace,
		Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		clock.Advance(cfg.UpCooldown)
		rep := c.Pass(ctx)
		if rep.Visited != len(zones) || rep.Errors != 0 {
			b.Fatalf("pass %+v", rep)
		}
	}
	b.ReportMetric(float64(len(zones)), "zones/pass")
}
