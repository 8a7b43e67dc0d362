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

// A hold is shown only once it is stored, so a decision a reader saw
// survives a crash of the console (a kill -9 between a round and its write):
// a pass shows its holds after its one write, an API round after its own, and
// a hold the store refused is not shown (the next pass writes the newest),
// and a resync that keeps its own newer hold shows the decision another
// writer stored.
func TestHoldShownOnceStored(t *testing.T) {
	for _, tc := range []struct {
		name   string
		steps  []string // "pass", "round" or "resync" (another writer stores a hold 1 s before, then Resync), each at 10 s after the last
		refuse []bool   // the store refuses that step's write
		hold   bool     // the last step's hold is shown (and stored)
	}{
		{"pass, stored", []string{"pass"}, []bool{false}, true},
		{"pass, store refused", []string{"pass"}, []bool{true}, false},
		{"API round, stored", []string{"round"}, []bool{false}, true},
		{"API round, store refused", []string{"round"}, []bool{true}, false},
		{"API round refused, then a pass", []string{"round", "pass"}, []bool{true, false}, true},
		{"API round refused, then another writer's older hold and a resync", []string{"round", "resync"}, []bool{true, false}, false},
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
			refuse := false
			var shownWhileWriting []*autoscaler.Decision
			hw := holdWrites{Store: st, before: func([]store.ZoneDecision) error {
				v, err := c.Zone("g1", "a")
				if err != nil {
					t.Error(err)
				}
				shownWhileWriting = append(shownWhileWriting, v.LastDecision)
				if refuse {
					return errors.New("disk full")
				}
				return nil
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
			fleet.SetLoad("g1", "a", 0, 0)
			// sameAsStored: the view shows the decision the store holds.
			sameAsStored := func(when string) *autoscaler.Decision {
				t.Helper()
				v, _ := c.Zone("g1", "a")
				stored, err := st.Zone("g1", "a")
				if err != nil {
					t.Fatal(err)
				}
				if v.LastDecision == nil || stored.LastDecision == nil || !v.LastDecision.At.Equal(stored.LastDecision.At) {
					t.Fatalf("%s the view shows %+v, the store holds %+v: want the same decision", when, v.LastDecision, stored.LastDecision)
				}
				return v.LastDecision
			}
			for i, step := range tc.steps {
				before := sameAsStored("before " + step)
				clock.Set(t0.Add(time.Duration(i+1) * 10 * time.Second))
				refuse = tc.refuse[i]
				shownWhileWriting = nil
				switch step {
				case "pass":
					if rep := c.Pass(ctx); rep.Hold != 1 {
						t.Fatalf("pass %+v, want one hold", rep)
					}
				case "resync":
					// The refused round's hold (10 s) stays newer than the
					// other writer's (9 s): Resync keeps it, unstored.
					refuse = false
					other := autoscaler.Decision{Action: autoscaler.ActionHold, From: 1, To: 1, Reason: "another console", At: clock.Now().Add(-time.Second - 10*time.Second)}
					if err := st.SetLastDecisions([]store.ZoneDecision{{Group: "g1", Zone: "a", Decision: other}}); err != nil {
						t.Fatal(err)
					}
					if err := c.Resync(); err != nil {
						t.Fatal(err)
					}
					sameAsStored("after resync")
					continue
				case "round":
					d, err := c.Round(ctx, "g1", "a", "ga")
					if d.Action != autoscaler.ActionHold || (err != nil) != refuse {
						t.Fatalf("round: %s, %v; want a hold, refused: %v", d.Action, err, refuse)
					}
				}
				if len(shownWhileWriting) != 1 || shownWhileWriting[0] == nil || !shownWhileWriting[0].At.Equal(before.At) {
					t.Fatalf("%s: while the hold was being written the view showed %+v, want the stored %+v", step, shownWhileWriting, before)
				}
				after := sameAsStored("after " + step)
				if refuse && !after.At.Equal(before.At) {
					t.Fatalf("%s refused: the view shows %+v, want %+v still", step, after, before)
				}
			}
			last := sameAsStored("at the end")
			if shown := last.Action == autoscaler.ActionHold && last.At.Equal(clock.Now()); shown != tc.hold {
				t.Fatalf("the view shows %s at %s, want the last step's hold shown: %v", last.Action, last.At, tc.hold)
			}
		})
	}
}
