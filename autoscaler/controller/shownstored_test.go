package controller_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/controller/controllertest"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// holdWrites is a store whose SetLastDecisions first calls before (which may
// refuse the write).
type holdWrites struct {
	*store.Store
	before func(ds []store.ZoneDecision) error
}

func (s holdWrites) SetLastDecisions(ds []store.ZoneDecision) error {
	if err := s.before(ds); err != nil {
		return err
	}
	return s.Store.SetLastDecisions(ds)
}

// A hold the scheduler's pass decides is shown only once it is stored, so a
// decision a reader saw survives a crash of the console (a kill -9 between
// the round and the pass's write); a hold the store refused is not shown.
func TestPassShowsAHoldOnceStored(t *testing.T) {
	for _, tc := range []struct {
		name     string
		storeErr error
	}{
		{"stored", nil},
		{"store refused", errors.New("disk full")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clock := controllertest.NewClock(t0)
			fleet := controllertest.NewFleet(clock)
			st, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			var c *controller.Controller
			var shownWhileWriting []*autoscaler.Decision
			hw := holdWrites{Store: st, before: func([]store.ZoneDecision) error {
				v, err := c.Zone("g1", "a")
				if err != nil {
					t.Error(err)
				}
				shownWhileWriting = append(shownWhileWriting, v.LastDecision)
				return tc.storeErr
			}}
			cfg := autoscaler.DefaultStepConfig()
			c, err = controller.New(controller.Options{
				Store: hw, Target: fleet, Discovery: fleet, Scraper: fleet,
				Policy: controller.StepPolicyWithFaults(cfg, nil), StartupGrace: cfg.StartupGrace,
				Clock: clock, Tickers: controllertest.NewTickers(), Logger: slog.New(slog.DiscardHandler), Concurrency: 1,
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Apply(ctx, "ga", "g1", "a", controller.Change{Count: ptr(1), MaxCount: ptr(3)}); err != nil {
				t.Fatal(err)
			}
			v, _ := c.Zone("g1", "a")
			set := v.LastDecision
			if set == nil {
				t.Fatal("no decision shown after the forced change")
			}

			clock.Set(t0.Add(10 * time.Second))
			fleet.SetLoad("g1", "a", 0, 0)
			if rep := c.Pass(ctx); rep.Hold != 1 {
				t.Fatalf("pass %+v, want one hold", rep)
			}
			if len(shownWhileWriting) != 1 || shownWhileWriting[0] == nil || !shownWhileWriting[0].At.Equal(set.At) {
				t.Fatalf("while the hold was being written the view showed %+v, want the stored %+v", shownWhileWriting, set)
			}
			v, _ = c.Zone("g1", "a")
			stored, err := st.Zone("g1", "a")
			if err != nil {
				t.Fatal(err)
			}
			if v.LastDecision == nil || stored.LastDecision == nil || !v.LastDecision.At.Equal(stored.LastDecision.At) {
				t.Fatalf("after the pass the view shows %+v, the store holds %+v: want the same decision", v.LastDecision, stored.LastDecision)
			}
			wantHold := tc.storeErr == nil
			if gotHold := v.LastDecision.Action == autoscaler.ActionHold; gotHold != wantHold {
				t.Fatalf("after the pass the view shows %s at %s, want the hold shown: %v", v.LastDecision.Action, v.LastDecision.At, wantHold)
			}
		})
	}
}
