package target

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/console"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/controller/controllertest"
	"github.com/scaleproof/scaleproof/autoscaler/store"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

var consoleKeys = platform.Keys{
	SuperAdmin: platform.Key{Name: "root", Key: "k-root-0123456789", Role: "super_admin"},
	GroupAdmin: platform.Key{Name: "ga", Key: "k-ga-0123456789", Role: "group_admin", Groups: []string{"g1"}},
	Viewer:     platform.Key{Name: "v", Key: "k-v-0123456789", Role: "viewer"},
	MCPUser:    platform.Key{Name: "m", Key: "k-m-0123456789", Role: "mcp_user"},
}

// referenceConsole serves the reference console over a fake fleet and a
// fresh store on a loopback port, with the zone g1/z at count 1, max 3.
// t0 is the tests' fixed start.
var t0 = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

func referenceConsole(t *testing.T) *consoleclient.Client {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clock := controllertest.NewClock(t0)
	fl := controllertest.NewFleet(clock)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := autoscaler.DefaultStepConfig()
	c, err := controller.New(controller.Options{Store: st, Target: fl, Discovery: fl, Scraper: fl,
		Policy: controller.StepPolicy(cfg), StartupGrace: cfg.StartupGrace, Clock: clock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := console.ParseKeys([]byte(`{"keys":[
 {"name":"root","key":"k-root-0123456789","role":"super_admin"},
 {"name":"ga","key":"k-ga-0123456789","role":"group_admin","groups":["g1"]},
 {"name":"v","key":"k-v-0123456789","role":"viewer"},
 {"name":"m","key":"k-m-0123456789","role":"mcp_user"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	h, err := console.New(console.Options{Controller: c, Store: st, Keys: keys, Logger: quiet, Pages: console.PagesOptions{Off: true}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cl := consoleclient.New(srv.URL, 5*time.Second)
	one, three := 1, 3
	if st, err := cl.PutZone(context.Background(), consoleKeys.GroupAdmin.Key, "g1", "z", consoleclient.Update{Count: &one, MaxCount: &three}); err != nil || st != 200 {
		t.Fatalf("create zone: %d %v", st, err)
	}
	return cl
}

// Against the reference console: the roles, the bounds, the count and the
// audit trail, each read back through State and Trail.
func TestConsoleAgainstTheReferenceConsole(t *testing.T) {
	ctx := context.Background()
	since := t0.Add(-time.Hour) // the console's clock
	tg := NewConsole(referenceConsole(t), consoleKeys, "g1", "z")
	if tg.Kind() != Console || tg.Name() != "zone g1/z" {
		t.Errorf("Kind, Name = %s, %q", tg.Kind(), tg.Name())
	}
	state := func() State {
		t.Helper()
		s, err := tg.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := state(); s.Count != 1 || s.Min != 1 || s.Max != 3 || s.Desired != 1 {
		t.Fatalf("State = %+v, want count 1 in 1..3", s)
	}
	for _, c := range []struct {
		name     string
		do       func() (Outcome, error)
		want     int
		count    int
		max      int
		errMatch error
	}{
		{name: "viewer's max refused", do: func() (Outcome, error) { return tg.SetBounds(ctx, Viewer, 1, 5) }, want: 403, count: 1, max: 3},
		{name: "viewer's count refused", do: func() (Outcome, error) { return tg.SetCount(ctx, Viewer, 2) }, want: 403, count: 1, max: 3},
		{name: "admin's count", do: func() (Outcome, error) { return tg.SetCount(ctx, Admin, 3) }, want: 200, count: 3, max: 3},
		{name: "admin's count above the max", do: func() (Outcome, error) { return tg.SetCount(ctx, Admin, 4) }, want: 422, count: 3, max: 3},
		{name: "admin lowers the max: applies in the request", do: func() (Outcome, error) { return tg.SetBounds(ctx, Admin, 1, 2) }, want: 200, count: 2, max: 2},
		{name: "admin's max below 1", do: func() (Outcome, error) { return tg.SetBounds(ctx, Admin, 1, 0) }, want: 422, count: 2, max: 2},
		{name: "a min other than 1 is no request", do: func() (Outcome, error) { return tg.SetBounds(ctx, Admin, 2, 3) }, errMatch: errMinIsOne, count: 2, max: 2},
	} {
		o, err := c.do()
		switch {
		case c.errMatch != nil:
			if !errors.Is(err, c.errMatch) {
				t.Errorf("%s: err = %v, want %v", c.name, err, c.errMatch)
			}
		case err != nil || o.Status != c.want:
			t.Errorf("%s: %+v, %v; want %d", c.name, o, err, c.want)
		case !o.Accepted() && o.Message == "":
			t.Errorf("%s: refused with no message", c.name)
		}
		if s := state(); s.Count != c.count || s.Max != c.max {
			t.Errorf("%s: count %d max %d, want %d %d", c.name, s.Count, s.Max, c.count, c.max)
		}
	}
	trail, err := tg.Trail(ctx, since)
	if err != nil {
		t.Fatal(err)
	}
	var seq []int
	for _, c := range trail {
		seq = append(seq, c.From, c.To)
		if c.Actor != "ga" || c.Source != "audit" {
			t.Errorf("entry %+v: want actor ga, source audit", c)
		}
	}
	// created 0 -> 1, set 1 -> 3, the lowered max 3 -> 2; no refusal.
	if want := []int{0, 1, 1, 3, 3, 2}; !slices.Equal(seq, want) {
		t.Errorf("Trail from/to = %v, want %v (%+v)", seq, want, trail)
	}
	if later, err := tg.Trail(ctx, t0.Add(time.Second)); err != nil || len(later) != 0 {
		t.Errorf("Trail from later = %+v, %v; want none", later, err)
	}
	if _, err := NewConsole(referenceConsole(t), consoleKeys, "g1", "nope").State(ctx); err == nil || !strings.Contains(err.Error(), "status 404") {
		t.Errorf("State of a missing zone: %v, want status 404", err)
	}
}

func TestAuditChanges(t *testing.T) {
	es := []consoleclient.AuditEntry{
		{At: t0, Actor: "scheduler", Action: "workers.autoscale", Tags: map[string]string{"action": "up", "from": "1", "to": "3", "reason": "mean in-flight 62 %"}},
		{At: t0, Actor: "v", Action: "workers.count", Tags: map[string]string{"error": "forbidden"}, Error: "forbidden"},
		{At: t0, Actor: "ga", Action: "workers.max_count", Tags: map[string]string{"from": "3", "to": "2"}},
		{At: t0, Actor: "ga", Action: "workers.count", Tags: map[string]string{"to": "2", "reason": "max lowered to 2"}},
		{At: t0, Actor: "ga", Action: "workers.count", Tags: map[string]string{"from": "2", "to": "x"}},
		{At: t0, Actor: "ga", Action: "workers.rebalance", Tags: map[string]string{"from": "2", "to": "2"}},
	}
	want := []Change{
		{At: t0, From: 1, To: 3, Reason: "mean in-flight 62 %", Actor: "scheduler", Source: "audit"},
		{At: t0, From: -1, To: 2, Reason: "max lowered to 2", Actor: "ga", Source: "audit"},
	}
	if got := AuditChanges(es); !slices.EqualFunc(got, want, Change.Equal) {
		t.Errorf("AuditChanges = %+v, want %+v", got, want)
	}
}

func TestConsoleContracts(t *testing.T) {
	for _, c := range []struct {
		name   string
		s      ConsoleSettings
		bounds map[Fact]time.Duration
		text   map[Fact]string
	}{
		{"the notes' defaults", ConsoleSettings{},
			map[Fact]time.Duration{FactScalesUp: 90 * time.Second, FactLoweredMax: 0, FactCountSet: 0, FactTrail: time.Second,
				FactNoEarlyScaleDown: 120 * time.Second, FactBackToMin: 180 * time.Second},
			map[Fact]string{FactCountSet: "kept", FactBackToMin: "for one step", FactLoweredMax: "in the request"}},
		{"the selftest profile's clock, max 3",
			ConsoleSettingsFrom(consoleclient.AutoscaleConfig{UpCooldownSeconds: 4, DownCooldownSeconds: 6, LowRounds: 3, IntervalSeconds: 1}, 3),
			// a step: max(6 + 1, 3 × 1) = 7 s; 2 steps from 3.
			map[Fact]time.Duration{FactScalesUp: 5 * time.Second, FactCountSet: 0, FactNoEarlyScaleDown: 2 * time.Second, FactBackToMin: 14 * time.Second},
			map[Fact]string{FactBackToMin: "2 steps from the max 3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := NewConsoleWith(nil, consoleKeys, "g1", "z", c.s).Contracts()
			if err := k.Check(); err != nil {
				t.Fatal(err)
			}
			for _, f := range Facts {
				if !k[f].Applies {
					t.Errorf("%s does not apply on the console", f)
				}
			}
			for f, b := range c.bounds {
				if k[f].Bound != b {
					t.Errorf("%s: bound %s, want %s (%s)", f, k[f].Bound, b, k[f].Text)
				}
			}
			for f, s := range c.text {
				if !strings.Contains(k[f].Text, s) {
					t.Errorf("%s: %q lacks %q", f, k[f].Text, s)
				}
			}
		})
	}
}
