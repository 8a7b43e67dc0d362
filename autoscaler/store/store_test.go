package store_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

var t0 = time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC)

func open(t *testing.T, path string) *store.Store {
	t.Helper()
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "console.db")
	s := open(t, path)
	d := autoscaler.Decision{Action: autoscaler.ActionHold, From: 2, To: 2, Reason: "steady", At: t0}
	z := store.Zone{Group: "g1", Zone: "a", Count: 2, MaxCount: 3, LastChange: t0, LastDecision: &d, Created: t0}
	audits, err := s.Commit([]store.Zone{z}, []store.AuditEntry{
		{At: t0, Actor: "ga", Group: "g1", Zone: "a", Action: "workers.count", Tags: map[string]string{"from": "1", "to": "2"}},
		{At: t0, Actor: "v", Group: "g1", Zone: "a", Action: "workers.max_count", Tags: map[string]string{"error": "forbidden"}, Error: "forbidden"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if audits[0].ID != 1 || audits[1].ID != 2 {
		t.Fatalf("ids = %d, %d, want 1, 2", audits[0].ID, audits[1].ID)
	}
	if _, err := s.SetAutoRebalance(store.AutoRebalance{Enabled: true, Interval: 1500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Zone("g1", "a"); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("read after close: err = %v, want ErrClosed", err)
	}
	if err := s.Ready(); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("ready after close: err = %v, want ErrClosed", err)
	}

	s = open(t, path)
	defer s.Close()
	got, err := s.Zone("g1", "a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Count != 2 || got.MaxCount != 3 || !got.LastChange.Equal(t0) || got.LastDecision == nil || got.LastDecision.Reason != "steady" {
		t.Fatalf("zone after reopen = %+v", got)
	}
	cfg, err := s.AutoRebalance()
	if err != nil || !cfg.Enabled || cfg.Interval != 1500*time.Millisecond {
		t.Fatalf("config after reopen = %+v, %v", cfg, err)
	}
	e, err := s.AppendAudit(store.AuditEntry{At: t0, Actor: "scheduler", Group: "g1", Zone: "a", Action: "workers.autoscale"})
	if err != nil || e.ID != 3 {
		t.Fatalf("append after reopen: id %d, err %v; want id 3", e.ID, err)
	}
	all, err := s.Audit(store.AuditQuery{})
	if err != nil || len(all) != 3 || all[0].ID != 3 || all[2].ID != 1 || all[1].Error != "forbidden" {
		t.Fatalf("audit after reopen = %+v, %v", all, err)
	}
}

func TestDefaults(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "s.db"))
	defer s.Close()
	cfg, err := s.AutoRebalance()
	if err != nil || cfg.Enabled || cfg.Interval != 60*time.Second {
		t.Fatalf("default config = %+v, %v; want off, 60s", cfg, err)
	}
	if _, err := s.Zone("g", "z"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing zone: err = %v", err)
	}
	if zs, err := s.Zones(); err != nil || len(zs) != 0 {
		t.Fatalf("zones = %v, %v", zs, err)
	}
	if _, err := s.SetAutoRebalance(store.AutoRebalance{Interval: 0}); err == nil {
		t.Fatal("interval 0 accepted")
	}
	if err := s.PutZone(store.Zone{Group: "", Zone: "a", Count: 1, MaxCount: 1}); err == nil {
		t.Fatal("empty group accepted")
	}
}

func TestAuditQuery(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "s.db"))
	defer s.Close()
	add := func(actor, g, z, action string) {
		t.Helper()
		if _, err := s.AppendAudit(store.AuditEntry{At: t0, Actor: actor, Group: g, Zone: z, Action: action}); err != nil {
			t.Fatal(err)
		}
	}
	add("root", "", "", "config.autorebalance")
	add("scheduler", "g1", "a", "workers.autoscale")
	add("ga", "g1", "b", "workers.count")
	add("gb", "g2", "a", "workers.max_count")
	add("scheduler", "g1", "a", "workers.autoscale")

	ids := func(es []store.AuditEntry) []uint64 {
		var out []uint64
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		q    store.AuditQuery
		want []uint64
	}{
		{"all newest first", store.AuditQuery{}, []uint64{5, 4, 3, 2, 1}},
		{"limit", store.AuditQuery{Limit: 2}, []uint64{5, 4}},
		{"group", store.AuditQuery{Group: "g1"}, []uint64{5, 3, 2}},
		{"group zone", store.AuditQuery{Group: "g1", Zone: "a"}, []uint64{5, 2}},
		{"action", store.AuditQuery{Action: "workers.autoscale"}, []uint64{5, 2}},
		{"admin groups", store.AuditQuery{Groups: []string{"g2"}}, []uint64{4}},
		{"admin no groups", store.AuditQuery{Groups: []string{}}, nil},
		{"zone anywhere", store.AuditQuery{Zone: "a"}, []uint64{5, 4, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Audit(tc.q)
			if err != nil {
				t.Fatal(err)
			}
			g := ids(got)
			if len(g) != len(tc.want) {
				t.Fatalf("ids = %v, want %v", g, tc.want)
			}
			for i := range g {
				if g[i] != tc.want[i] {
					t.Fatalf("ids = %v, want %v", g, tc.want)
				}
			}
		})
	}
}

func TestSetLastDecisions(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "s.db"))
	defer s.Close()
	set := autoscaler.Decision{Action: autoscaler.ActionSet, From: 1, To: 2, At: t0.Add(time.Minute)}
	if err := s.PutZone(store.Zone{Group: "g", Zone: "a", Count: 2, MaxCount: 3, LastDecision: &set}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutZone(store.Zone{Group: "g", Zone: "b", Count: 1, MaxCount: 1}); err != nil {
		t.Fatal(err)
	}
	older := autoscaler.Decision{Action: autoscaler.ActionHold, From: 1, To: 1, At: t0}
	newer := autoscaler.Decision{Action: autoscaler.ActionHold, From: 1, To: 1, At: t0.Add(2 * time.Minute), Reason: "steady"}
	err := s.SetLastDecisions([]store.ZoneDecision{
		{Group: "g", Zone: "a", Decision: older},    // older than the stored set: kept out
		{Group: "g", Zone: "b", Decision: newer},    // written
		{Group: "g", Zone: "gone", Decision: newer}, // skipped
	})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.Zone("g", "a")
	b, _ := s.Zone("g", "b")
	if a.LastDecision.Action != autoscaler.ActionSet || a.Count != 2 {
		t.Fatalf("a = %+v", a)
	}
	if b.LastDecision == nil || b.LastDecision.Reason != "steady" || b.Count != 1 {
		t.Fatalf("b = %+v", b)
	}
	if _, err := s.Zone("g", "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("gone was created: %v", err)
	}
}

func TestLockedFileFailsFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s := open(t, path)
	defer s.Close()
	if _, err := store.Open(path, store.Options{LockTimeout: 50 * time.Millisecond}); err == nil {
		t.Fatal("second open of a locked file succeeded")
	}
}
