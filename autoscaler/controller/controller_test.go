package controller_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/controller/controllertest"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC)

// wait guards a test against a broken scheduler; nothing sleeps on it.
const wait = 10 * time.Second

// logBuf collects JSON log lines.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the log lines whose msg is msg.
func (l *logBuf) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

type rig struct {
	path    string
	store   *store.Store
	clock   *controllertest.Clock
	fleet   *controllertest.Fleet
	tickers *controllertest.Tickers
	logs    *logBuf
	c       *controller.Controller
	passes  chan controller.PassReport
	faults  faults.Set // planted bugs (faults_test.go)
}

func newRig(t *testing.T) *rig { t.Helper(); return newRigWith(t, nil) }

// newRigWith is newRig with planted bugs switched on.
func newRigWith(t *testing.T, fs faults.Set) *rig {
	t.Helper()
	clock := controllertest.NewClock(t0)
	r := &rig{path: filepath.Join(t.TempDir(), "state.db"), clock: clock, fleet: controllertest.NewFleet(clock),
		tickers: controllertest.NewTickers(), logs: &logBuf{}, passes: make(chan controller.PassReport, 16), faults: fs}
	r.start(t)
	t.Cleanup(func() { _ = r.store.Close() })
	return r
}

// start opens the store and makes a controller over it (again: a restart).
func (r *rig) start(t *testing.T) {
	t.Helper()
	st, err := store.Open(r.path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	r.store = st
	cfg := autoscaler.DefaultStepConfig()
	r.c, err = controller.New(controller.Options{
		Store: st, Target: r.fleet, Discovery: r.fleet, Scraper: r.fleet,
		Policy: controller.StepPolicyWithFaults(cfg, r.faults), StartupGrace: cfg.StartupGrace, Faults: r.faults,
		Clock: r.clock, Tickers: r.tickers,
		Logger:      slog.New(slog.NewJSONHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnPass:      func(p controller.PassReport) { r.passes <- p },
		Concurrency: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (r *rig) restart(t *testing.T) {
	t.Helper()
	if err := r.store.Close(); err != nil {
		t.Fatal(err)
	}
	r.start(t)
}

func (r *rig) audit(t *testing.T, q store.AuditQuery) []store.AuditEntry {
	t.Helper()
	es, err := r.store.Audit(q)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func ptr(n int) *int { return &n }

func wantTags(t *testing.T, e store.AuditEntry, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if e.Tags[k] != v {
			t.Errorf("audit %d %s: tag %s = %q, want %q (tags %v)", e.ID, e.Action, k, e.Tags[k], v, e.Tags)
		}
	}
}

func TestRoundUpHoldDownAcrossRestart(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	if _, err := r.c.Apply(ctx, "ga", "g1", "a", controller.Change{Count: ptr(1), MaxCount: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	r.fleet.SetLoad("g1", "a", 30, 0) // 30/32 in flight: high

	type step struct {
		at      time.Duration // since t0
		load    int           // in flight per worker
		restart bool          // close the store and make a new controller first
		action  autoscaler.Action
		to      int
		reason  string // substring
	}
	steps := []step{
		{at: 10 * time.Second, load: 30, action: autoscaler.ActionHold, to: 1, reason: "up cooldown"},
		{at: 31 * time.Second, load: 30, action: autoscaler.ActionUp, to: 2, reason: "high"},
		// The last change (t0+31s) survives a restart: the up cooldown still runs.
		{at: 45 * time.Second, load: 30, restart: true, action: autoscaler.ActionHold, to: 2, reason: "up cooldown"},
		{at: 50 * time.Second, load: 0, action: autoscaler.ActionHold, to: 2, reason: "1 of 3 rounds"},
		{at: 60 * time.Second, load: 0, action: autoscaler.ActionHold, to: 2, reason: "2 of 3 rounds"},
		{at: 70 * time.Second, load: 0, restart: true, action: autoscaler.ActionHold, to: 2, reason: "1 of 3 rounds"},
		{at: 80 * time.Second, load: 0, action: autoscaler.ActionHold, to: 2, reason: "2 of 3 rounds"},
		{at: 90 * time.Second, load: 0, action: autoscaler.ActionHold, to: 2, reason: "down cooldown"},
		{at: 152 * time.Second, load: 0, action: autoscaler.ActionDown, to: 1, reason: "would stay under"},
	}
	for _, s := range steps {
		if s.restart {
			r.restart(t)
		}
		r.clock.Set(t0.Add(s.at))
		r.fleet.SetLoad("g1", "a", s.load, 0)
		d, err := r.c.Round(ctx, "g1", "a", controller.ActorScheduler)
		if err != nil {
			t.Fatalf("t+%s: %v", s.at, err)
		}
		if d.Action != s.action || d.To != s.to || !strings.Contains(d.Reason, s.reason) {
			t.Fatalf("t+%s: decision %s %d->%d %q, want %s to %d with %q", s.at, d.Action, d.From, d.To, d.Reason, s.action, s.to, s.reason)
		}
		z, err := r.store.Zone("g1", "a")
		if err != nil {
			t.Fatal(err)
		}
		if z.Count != s.to || z.LastDecision == nil || z.LastDecision.Action != s.action || !z.LastDecision.At.Equal(t0.Add(s.at)) {
			t.Fatalf("t+%s: stored zone %+v, last %+v", s.at, z, z.LastDecision)
		}
		if got := r.fleet.Replicas("g1", "a"); got != s.to {
			t.Fatalf("t+%s: fleet runs %d, want %d", s.at, got, s.to)
		}
	}
	z, _ := r.store.Zone("g1", "a")
	if !z.LastChange.Equal(t0.Add(152 * time.Second)) {
		t.Fatalf("last_change = %s, want t0+152s", z.LastChange)
	}

	es := r.audit(t, store.AuditQuery{Action: controller.AuditAutoscale})
	if len(es) != 2 {
		t.Fatalf("autoscale audit entries = %d, want 2 (holds are not audited): %+v", len(es), es)
	}
	wantTags(t, es[1], map[string]string{"action": "up", "from": "1", "to": "2"})
	wantTags(t, es[0], map[string]string{"action": "down", "from": "2", "to": "1"})
	for _, e := range es {
		if e.Actor != controller.ActorScheduler || e.Group != "g1" || e.Zone != "a" || e.Tags["reason"] == "" {
			t.Errorf("audit entry %+v", e)
		}
	}
	if scales := r.fleet.Scales(); len(scales[len(scales)-1].Victims) == 0 {
		t.Errorf("down without victims: %+v", scales[len(scales)-1])
	}
	lines := r.logs.lines(t, "autoscale")
	if len(lines) != 2 {
		t.Fatalf("autoscale log lines = %d, want 2", len(lines))
	}
	for i, want := range []struct{ action, from, to string }{{"up", "1", "2"}, {"down", "2", "1"}} {
		l := lines[i]
		if l["action"] != want.action || l["from"] != float64(atoi(want.from)) || l["to"] != float64(atoi(want.to)) ||
			l["group"] != "g1" || l["zone"] != "a" || l["actor"] != "scheduler" || l["reason"] == "" {
			t.Errorf("log line %d = %v", i, l)
		}
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func TestRoundAtMaxWarns(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	if _, err := r.c.SetCount(ctx, "root", "g1", "a", 1); err != nil { // max = count = 1
		t.Fatal(err)
	}
	r.fleet.SetLoad("g1", "a", 32, 0)
	r.clock.Advance(time.Hour)
	d, err := r.c.Round(ctx, "g1", "a", "root")
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != autoscaler.ActionHold || !d.AtMaxUnderLoad {
		t.Fatalf("decision %+v, want a hold at max under load", d)
	}
	if w := r.logs.lines(t, "zone at max under load"); len(w) != 1 || w[0]["level"] != "WARN" {
		t.Fatalf("warning lines = %v", w)
	}
}

// TestForcedChangeKeepsItsReason: lowering the max under load brings the
// count down with a "set" that names its cause and actor; the scheduler's
// hold at the new max that follows replaces the last decision, not the last
// scale, so the change is never explained as "at max 1 under load".
func TestForcedChangeKeepsItsReason(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	if _, err := r.c.Apply(ctx, "ga", "g1", "a", controller.Change{Count: ptr(3), MaxCount: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	r.fleet.SetLoad("g1", "a", 90, 0)
	r.clock.Advance(time.Minute)
	if _, err := r.c.SetMax(ctx, "ops", "g1", "a", 1); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Minute)
	if d, err := r.c.Round(ctx, "g1", "a", controller.ActorScheduler); err != nil || d.Action != autoscaler.ActionHold {
		t.Fatalf("round: %+v %v, want a hold at max", d, err)
	}
	v, err := r.c.Zone("g1", "a")
	if err != nil {
		t.Fatal(err)
	}
	if v.LastDecision == nil || v.LastDecision.Action != autoscaler.ActionHold {
		t.Fatalf("last decision %+v, want the hold", v.LastDecision)
	}
	ls := v.LastScale
	if ls == nil || ls.Action != autoscaler.ActionSet || ls.From != 3 || ls.To != 1 || ls.Reason != "max lowered to 1 by ops" {
		t.Fatalf("last scale %+v, want set 3->1: max lowered to 1 by ops", ls)
	}
	if z, _ := r.store.Zone("g1", "a"); z.LastScale == nil || z.LastScale.Reason != ls.Reason {
		t.Fatalf("stored last scale %+v", z.LastScale)
	}
}

func TestRoundScaleFailureChangesNothing(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	if _, err := r.c.Apply(ctx, "ga", "g1", "a", controller.Change{Count: ptr(1), MaxCount: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	before := len(r.audit(t, store.AuditQuery{}))
	r.fleet.SetLoad("g1", "a", 30, 0)
	r.clock.Advance(time.Minute)
	r.fleet.SetScaleError(errors.New("platform down"))
	_, err := r.c.Round(ctx, "g1", "a", controller.ActorScheduler)
	if !errors.Is(err, controller.ErrScale) {
		t.Fatalf("err = %v, want ErrScale", err)
	}
	z, _ := r.store.Zone("g1", "a")
	if z.Count != 1 || !z.LastChange.Equal(t0) {
		t.Fatalf("zone after a failed scale = %+v", z)
	}
	if v, _ := r.c.Zone("g1", "a"); v.Count != 1 {
		t.Fatalf("view count = %d, want 1", v.Count)
	}
	if n := len(r.audit(t, store.AuditQuery{})); n != before {
		t.Fatalf("audit grew from %d to %d on a failed scale", before, n)
	}
	if l := r.logs.lines(t, "autoscale failed"); len(l) != 1 {
		t.Fatalf("failure log lines = %v", l)
	}
	// Once the target is back, the next round scales.
	r.fleet.SetScaleError(nil)
	if d, err := r.c.Round(ctx, "g1", "a", controller.ActorScheduler); err != nil || d.Action != autoscaler.ActionUp {
		t.Fatalf("round after recovery: %+v, %v", d, err)
	}
}

func TestRoundDiscoveryFailure(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	if _, err := r.c.SetCount(ctx, "root", "g1", "a", 1); err != nil {
		t.Fatal(err)
	}
	r.fleet.SetDiscoveryError(errors.New("no endpoints api"))
	if _, err := r.c.Round(ctx, "g1", "a", "root"); !errors.Is(err, controller.ErrDiscovery) {
		t.Fatalf("err = %v, want ErrDiscovery", err)
	}
	if _, err := r.c.Round(ctx, "g1", "nope", "root"); !errors.Is(err, controller.ErrNotFound) {
		t.Fatalf("unknown zone: err = %v, want ErrNotFound", err)
	}
}

func TestUnreachableWorkerNeverScalesIn(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	if _, err := r.c.Apply(ctx, "root", "g1", "a", controller.Change{Count: ptr(2), MaxCount: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	first := true
	r.fleet.Update("g1", "a", func(w *controllertest.Worker) {
		w.Unreachable = first
		first = false
	})
	for i := range 6 {
		r.clock.Advance(time.Minute)
		d, err := r.c.Round(ctx, "g1", "a", controller.ActorScheduler)
		if err != nil {
			t.Fatal(err)
		}
		if d.Action != autoscaler.ActionHold || !strings.Contains(d.Reason, "down") {
			t.Fatalf("round %d: %+v, want a hold for a down worker", i, d)
		}
	}
	v, _ := r.c.Zone("g1", "a")
	if v.Ready != 1 {
		t.Fatalf("ready = %d, want 1", v.Ready)
	}
}

func TestStartingWorkersFromDiscovery(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.fleet.SetNewNotReady(true)
	if _, err := r.c.SetCount(ctx, "root", "g1", "a", 2); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(10 * time.Second)
	v, err := r.c.ZoneLive(ctx, "g1", "a")
	if err != nil || v.Starting != 2 || v.Ready != 0 {
		t.Fatalf("live view %+v, %v; want 2 starting", v, err)
	}
	r.clock.Advance(5 * time.Minute) // past the startup grace: no longer starting
	v, err = r.c.ZoneLive(ctx, "g1", "a")
	if err != nil || v.Starting != 0 || v.Ready != 0 {
		t.Fatalf("live view %+v, %v; want none starting", v, err)
	}
}

func TestForcedChanges(t *testing.T) {
	type want struct {
		count, max int
		scaled     bool // a Scale call was made
		audits     []map[string]string
	}
	for _, tc := range []struct {
		name   string
		start  *controller.Change // nil: the zone does not exist
		change controller.Change
		err    string // field of the ValidationError
		want   want
	}{
		{
			name: "lowering max brings count down at once", start: &controller.Change{Count: ptr(3), MaxCount: ptr(3)},
			change: controller.Change{MaxCount: ptr(1)},
			want: want{count: 1, max: 1, scaled: true, audits: []map[string]string{
				{"action": controller.AuditCount, "from": "3", "to": "1", "reason": "max lowered to 1"},
				{"action": controller.AuditMaxCount, "from": "3", "to": "1"},
			}},
		},
		{
			name: "raising max keeps count", start: &controller.Change{Count: ptr(1), MaxCount: ptr(1)},
			change: controller.Change{MaxCount: ptr(3)},
			want:   want{count: 1, max: 3, audits: []map[string]string{{"action": controller.AuditMaxCount, "from": "1", "to": "3"}}},
		},
		{
			name: "manual count", start: &controller.Change{Count: ptr(1), MaxCount: ptr(3)},
			change: controller.Change{Count: ptr(3)},
			want: want{count: 3, max: 3, scaled: true, audits: []map[string]string{
				{"action": controller.AuditCount, "from": "1", "to": "3", "reason": "manual count"}}},
		},
		{
			name: "created by a count gets max = count", change: controller.Change{Count: ptr(2)},
			want: want{count: 2, max: 2, scaled: true, audits: []map[string]string{
				{"action": controller.AuditCount, "from": "0", "to": "2", "reason": "zone created"},
				{"action": controller.AuditMaxCount, "from": "0", "to": "2", "created": "true"},
			}},
		},
		{
			name: "created by a max gets count 1", change: controller.Change{MaxCount: ptr(3)},
			want: want{count: 1, max: 3, scaled: true, audits: []map[string]string{
				{"action": controller.AuditCount, "from": "0", "to": "1"},
				{"action": controller.AuditMaxCount, "from": "0", "to": "3"},
			}},
		},
		{name: "count 0", start: &controller.Change{Count: ptr(1), MaxCount: ptr(3)}, change: controller.Change{Count: ptr(0)}, err: "count"},
		{name: "count above max", start: &controller.Change{Count: ptr(1), MaxCount: ptr(3)}, change: controller.Change{Count: ptr(4)}, err: "count"},
		{name: "count above new max", start: &controller.Change{Count: ptr(1), MaxCount: ptr(3)}, change: controller.Change{Count: ptr(3), MaxCount: ptr(2)}, err: "count"},
		{name: "max 0", start: &controller.Change{Count: ptr(1), MaxCount: ptr(3)}, change: controller.Change{MaxCount: ptr(0)}, err: "max_count"},
		{name: "max negative", start: &controller.Change{Count: ptr(1), MaxCount: ptr(3)}, change: controller.Change{MaxCount: ptr(-5)}, err: "max_count"},
		{name: "max over limit", change: controller.Change{MaxCount: ptr(controller.MaxCountLimit + 1)}, err: "max_count"},
		{name: "create with count 0", change: controller.Change{Count: ptr(0)}, err: "count"},
		{name: "empty change", start: &controller.Change{Count: ptr(1)}, change: controller.Change{}, err: "count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := newRig(t)
			if tc.start != nil {
				if _, err := r.c.Apply(ctx, "root", "g1", "a", *tc.start); err != nil {
					t.Fatal(err)
				}
			}
			r.clock.Advance(5 * time.Second)
			scalesBefore := len(r.fleet.Scales())
			auditBefore := r.audit(t, store.AuditQuery{Limit: 1000})
			before, _ := r.store.Zone("g1", "a")

			v, err := r.c.Apply(ctx, "ga", "g1", "a", tc.change)
			if tc.err != "" {
				var ve *controller.ValidationError
				if !errors.As(err, &ve) || ve.Field != tc.err {
					t.Fatalf("err = %v, want a ValidationError on %s", err, tc.err)
				}
				after, _ := r.store.Zone("g1", "a")
				if after.Count != before.Count || after.MaxCount != before.MaxCount {
					t.Fatalf("zone changed by an invalid request: %+v -> %+v", before, after)
				}
				if tc.start == nil {
					if _, err := r.c.Zone("g1", "a"); !errors.Is(err, controller.ErrNotFound) {
						t.Fatalf("invalid create left a zone: %v", err)
					}
				}
				es := r.audit(t, store.AuditQuery{Limit: 1000})
				if len(es) != len(auditBefore)+1 || es[0].Error != controller.RefusedInvalid || es[0].Tags["error"] != "invalid" || es[0].Actor != "ga" {
					t.Fatalf("invalid attempt not audited: %+v", es[0])
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v.Count != tc.want.count || v.MaxCount != tc.want.max {
				t.Fatalf("view %+v, want count %d max %d", v, tc.want.count, tc.want.max)
			}
			z, _ := r.store.Zone("g1", "a")
			if z.Count != tc.want.count || z.MaxCount != tc.want.max {
				t.Fatalf("stored %+v, want count %d max %d", z, tc.want.count, tc.want.max)
			}
			if got := len(r.fleet.Scales()) - scalesBefore; (got > 0) != tc.want.scaled {
				t.Fatalf("scale calls = %d, want scaled %v", got, tc.want.scaled)
			}
			if tc.want.scaled {
				if got := r.fleet.Replicas("g1", "a"); got != tc.want.count {
					t.Fatalf("fleet runs %d, want %d at once", got, tc.want.count)
				}
				if !z.LastChange.Equal(r.clock.Now()) {
					t.Fatalf("last_change = %s, want now (cooldowns start)", z.LastChange)
				}
				if z.LastDecision == nil || z.LastDecision.Action != autoscaler.ActionSet {
					t.Fatalf("last decision = %+v, want set", z.LastDecision)
				}
			} else if !z.LastChange.Equal(before.LastChange) {
				t.Fatalf("last_change moved without a count change")
			}
			es := r.audit(t, store.AuditQuery{Limit: 1000})
			newEs := es[:len(es)-len(auditBefore)]
			if len(newEs) != len(tc.want.audits) {
				t.Fatalf("new audit entries %+v, want %d", newEs, len(tc.want.audits))
			}
			for i, w := range tc.want.audits {
				e := newEs[i]
				if e.Action != w["action"] || e.Actor != "ga" || e.Group != "g1" || e.Zone != "a" {
					t.Errorf("audit %+v, want %v by ga", e, w)
				}
				tags := map[string]string{}
				for k, v := range w {
					if k != "action" {
						tags[k] = v
					}
				}
				wantTags(t, e, tags)
			}
		})
	}
}

func TestForcedChangeScaleFailurePersistsNothing(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	if _, err := r.c.Apply(ctx, "root", "g1", "a", controller.Change{Count: ptr(3), MaxCount: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	r.fleet.SetScaleError(errors.New("platform down"))
	if _, err := r.c.SetMax(ctx, "root", "g1", "a", 1); !errors.Is(err, controller.ErrScale) {
		t.Fatalf("err = %v, want ErrScale", err)
	}
	if _, err := r.c.SetCount(ctx, "root", "g1", "new", 1); !errors.Is(err, controller.ErrScale) {
		t.Fatalf("create: err = %v, want ErrScale", err)
	}
	z, _ := r.store.Zone("g1", "a")
	if z.Count != 3 || z.MaxCount != 3 {
		t.Fatalf("zone %+v changed by a failed scale", z)
	}
	if _, err := r.c.Zone("g1", "new"); !errors.Is(err, controller.ErrNotFound) {
		t.Fatalf("failed create left a zone: %v", err)
	}
}

func TestSchedulerVisitsEveryZone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := newRig(t)
	zones := []struct{ g, z string }{{"g1", "a"}, {"g1", "b"}, {"g1", "c"}, {"g2", "a"}, {"g3", "x"}}
	for _, z := range zones {
		if _, err := r.c.Apply(ctx, "root", z.g, z.z, controller.Change{Count: ptr(1), MaxCount: ptr(3)}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- r.c.RunScheduler(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	// Off by default: no ticker until it is enabled.
	if _, err := r.c.SetAutoRebalance("root", store.AutoRebalance{Enabled: true, Interval: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	tk, err := r.tickers.Next(wait)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Interval != 20*time.Second {
		t.Fatalf("interval = %s, want 20s", tk.Interval)
	}
	for pass := 1; pass <= 3; pass++ {
		r.clock.Advance(20 * time.Second)
		if err := tk.Tick(r.clock.Now(), wait); err != nil {
			t.Fatal(err)
		}
		rep := <-r.passes
		if rep.Visited != len(zones) || rep.Errors != 0 {
			t.Fatalf("pass %d: %+v, want %d zones visited", pass, rep, len(zones))
		}
		for _, z := range zones {
			sz, _ := r.store.Zone(z.g, z.z)
			if sz.LastDecision == nil || !sz.LastDecision.At.Equal(r.clock.Now()) {
				t.Fatalf("pass %d: zone %s/%s not visited (last decision %+v)", pass, z.g, z.z, sz.LastDecision)
			}
		}
	}

	// A new interval takes effect without a restart.
	if _, err := r.c.SetAutoRebalance("root", store.AutoRebalance{Enabled: true, Interval: 1500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	<-tk.Stopped()
	tk2, err := r.tickers.Next(wait)
	if err != nil {
		t.Fatal(err)
	}
	if tk2.Interval != 1500*time.Millisecond {
		t.Fatalf("interval = %s, want 1.5s", tk2.Interval)
	}
	if err := tk2.Tick(r.clock.Now(), wait); err != nil {
		t.Fatal(err)
	}
	if rep := <-r.passes; rep.Visited != len(zones) {
		t.Fatalf("pass after new interval: %+v", rep)
	}

	// Disabled: the ticker stops.
	if _, err := r.c.SetAutoRebalance("root", store.AutoRebalance{Enabled: false, Interval: time.Minute}); err != nil {
		t.Fatal(err)
	}
	<-tk2.Stopped()
	if err := r.c.RunScheduler(ctx); !errors.Is(err, controller.ErrSchedulerRunning) {
		t.Fatalf("second scheduler: err = %v", err)
	}
	es := r.audit(t, store.AuditQuery{Action: controller.AuditAutoRebalance})
	if len(es) != 3 || es[0].Tags["enabled"] != "false" || es[1].Tags["interval_seconds"] != "1.5" {
		t.Fatalf("config audit = %+v", es)
	}
}

func TestSchedulerScalesUnderLoad(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := newRig(t)
	if _, err := r.c.Apply(ctx, "root", "g1", "a", controller.Change{Count: ptr(1), MaxCount: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.c.SetAutoRebalance("root", store.AutoRebalance{Enabled: true, Interval: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.c.RunScheduler(ctx) }()
	defer func() { cancel(); <-done }()
	tk, err := r.tickers.Next(wait)
	if err != nil {
		t.Fatal(err)
	}
	r.fleet.SetLoad("g1", "a", 32, 0)
	var counts []int
	for range 4 {
		r.clock.Advance(20 * time.Second)
		r.fleet.SetLoad("g1", "a", 32, 0)
		if err := tk.Tick(r.clock.Now(), wait); err != nil {
			t.Fatal(err)
		}
		<-r.passes
		counts = append(counts, r.fleet.Replicas("g1", "a"))
	}
	// t+20: cooldown from creation (t0) is 30 s: hold; t+40: up (ceil(1×2)=2);
	// t+60: cooldown; t+80: up to max 3.
	want := []int{1, 2, 2, 3}
	for i := range want {
		if counts[i] != want[i] {
			t.Fatalf("counts = %v, want %v", counts, want)
		}
	}
}

func TestSetAutoRebalanceValidation(t *testing.T) {
	r := newRig(t)
	for _, iv := range []time.Duration{0, -time.Second, time.Hour + time.Nanosecond} {
		_, err := r.c.SetAutoRebalance("root", store.AutoRebalance{Enabled: true, Interval: iv})
		var ve *controller.ValidationError
		if !errors.As(err, &ve) || ve.Field != "interval_seconds" {
			t.Fatalf("interval %s: err = %v", iv, err)
		}
	}
	if cfg := r.c.AutoRebalance(); cfg.Enabled || cfg.Interval != time.Minute {
		t.Fatalf("config changed by invalid requests: %+v", cfg)
	}
	if es := r.audit(t, store.AuditQuery{Action: controller.AuditAutoRebalance}); len(es) != 3 || es[0].Error != "invalid" {
		t.Fatalf("invalid attempts audited: %+v", es)
	}
}

func TestRebalanceAudits(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	if _, err := r.c.SetCount(ctx, "root", "g1", "a", 1); err != nil {
		t.Fatal(err)
	}
	d, err := r.c.Rebalance(ctx, "ga", "g1", "a")
	if err != nil || d.Action != autoscaler.ActionHold {
		t.Fatalf("rebalance = %+v, %v", d, err)
	}
	es := r.audit(t, store.AuditQuery{Action: controller.AuditRebalance})
	if len(es) != 1 || es[0].Actor != "ga" || es[0].Tags["action"] != "hold" {
		t.Fatalf("rebalance audit = %+v", es)
	}
	if _, err := r.c.Rebalance(ctx, "ga", "g1", "nope"); !errors.Is(err, controller.ErrNotFound) {
		t.Fatalf("unknown zone: %v", err)
	}
}

// commitSpy is a store whose Commit first calls before (with the audit
// entries about to be stored).
type commitSpy struct {
	*store.Store
	before func([]store.AuditEntry)
}

func (s commitSpy) Commit(zones []store.Zone, audits []store.AuditEntry) ([]store.AuditEntry, error) {
	s.before(audits)
	return s.Store.Commit(zones, audits)
}

// TestRoundAuditedBeforeShown: a round's change is audited before the
// console shows the new count, so a reader who sees the count finds the
// change's audit entry (the seed's "every change is audited").
func TestRoundAuditedBeforeShown(t *testing.T) {
	ctx := context.Background()
	clock := controllertest.NewClock(t0)
	fl := controllertest.NewFleet(clock)
	st, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	var c *controller.Controller
	var shownAtCommit []int // the count the console showed as each autoscale entry was stored
	spy := commitSpy{Store: st, before: func(audits []store.AuditEntry) {
		for _, a := range audits {
			if a.Action == controller.AuditAutoscale {
				v, _ := c.Zone(a.Group, a.Zone)
				shownAtCommit = append(shownAtCommit, v.Count)
			}
		}
	}}
	cfg := autoscaler.DefaultStepConfig()
	c, err = controller.New(controller.Options{Store: spy, Target: fl, Discovery: fl, Scraper: fl,
		Policy: controller.StepPolicy(cfg), StartupGrace: cfg.StartupGrace, Clock: clock, Tickers: controllertest.NewTickers(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(ctx, "ga", "g1", "a", controller.Change{Count: ptr(1), MaxCount: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	fl.SetLoad("g1", "a", 30, 0) // high
	clock.Advance(time.Minute)   // past the up cooldown
	d, err := c.Round(ctx, "g1", "a", controller.ActorScheduler)
	if err != nil || d.Action != autoscaler.ActionUp {
		t.Fatalf("round: %+v, %v; want up", d, err)
	}
	if len(shownAtCommit) != 1 || shownAtCommit[0] != 1 {
		t.Fatalf("counts shown as the up's audit entry was stored: %v, want [1] (the entry stored before the new count is shown)", shownAtCommit)
	}
	if v, _ := c.Zone("g1", "a"); v.Count != 2 {
		t.Fatalf("count shown after the round: %d, want 2", v.Count)
	}
}
