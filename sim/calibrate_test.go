package sim

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
)

// TestCalibrate: calibrating on a published-profile run made with a known
// model (a slower worker, a longer boot) recovers its service time and ready delay, and
// then matches its times and 429 share.
func TestCalibrate(t *testing.T) {
	truth := NewConfig(scenarios.Published())
	truth.Model.Service = Dist{Base: 250 * time.Millisecond, Jitter: 3 * time.Millisecond}
	truth.Model.ReadyDelay = Dist{Base: 8 * time.Second, Jitter: 250 * time.Millisecond}
	truth.Seed = 7
	truth.Scenarios = []string{"max-1", "sustained"} // a saturated worker, scale-ups: what the fit reads
	real := mustRun(t, truth)
	res, err := reports.Parse("truth.jsonl", bytes.NewReader(results(t, real)))
	if err != nil {
		t.Fatal(err)
	}
	base, err := ConfigFor(res)
	if err != nil {
		t.Fatal(err)
	}
	cal, err := Calibrate(context.Background(), res, base)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cal.Service, truth.Model.Service.Mean()+truth.Model.RTT; got < want*95/100 || got > want*105/100 {
		t.Errorf("service %s, want %s ± 5 %%", got, want)
	}
	// The ready delay is seen through 1 s samples: ± 1 s.
	if d := cal.ReadyDelay - truth.Model.ReadyDelay.Base; d.Abs() > time.Second {
		t.Errorf("ready delay %s, want %s ± 1 s", cal.ReadyDelay, truth.Model.ReadyDelay.Base)
	}
	within := func(name string, sim, real float64) {
		if real > 0 && (sim < real*0.85 || sim > real*1.15) {
			t.Errorf("%s: sim %v, real %v: more than 15 %% apart", name, sim, real)
		}
	}
	within("time to max", cal.Sim.UpToMaxS, cal.Real.UpToMaxS)
	within("back to 1", cal.Sim.BackTo1S, cal.Real.BackTo1S)
	within("429 %", cal.Sim.Pct429, cal.Real.Pct429)
	var out strings.Builder
	if err := cal.Write(&out); err != nil || !strings.Contains(out.String(), "time to max") {
		t.Errorf("report: %v\n%s", err, out.String())
	}
}

// TestCalibrateRefuses: results without what the fit needs are refused
// with the reason.
func TestCalibrateRefuses(t *testing.T) {
	cfg := NewConfig(scenarios.Quick())
	cfg.Scenarios = []string{"viewer-refused"}
	res, err := reports.Parse("x", bytes.NewReader(results(t, mustRun(t, cfg))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Calibrate(context.Background(), res, NewConfig(scenarios.Quick())); err == nil || !strings.Contains(err.Error(), "saturated") {
		t.Fatalf("err %v, want no saturated second", err)
	}
	empty := &reports.Results{Path: "empty"}
	if _, err := Calibrate(context.Background(), empty, NewConfig(scenarios.Quick())); err == nil || !strings.Contains(err.Error(), "no verdict") {
		t.Fatalf("err %v, want no verdict", err)
	}
}
