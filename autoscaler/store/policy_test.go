package store_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// TestPoliciesPersist: policies commit with zones and audit entries, are
// listed in (group, zone) order, and survive a reopen; a file written before
// the bucket existed lists none.
func TestPoliciesPersist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "console.db")
	s := open(t, path)
	if ps, err := s.Policies(); err != nil || len(ps) != 0 {
		t.Fatalf("a store without the bucket: %v %v", ps, err)
	}
	z := store.Zone{Group: "g1", Zone: "a", Count: 1, MaxCount: 3, Created: t0}
	spec := json.RawMessage(`{"query":"q","threshold":4}`)
	out, err := s.CommitPolicies([]store.ZonePolicy{
		{Group: "g2", Zone: "b", Policy: "step", Updated: t0},
		{Group: "g1", Zone: "a", Policy: "hpa", Spec: spec, Updated: t0},
	}, []store.Zone{z}, []store.AuditEntry{{At: t0, Actor: "ga", Group: "g1", Zone: "a", Action: "workers.policy",
		Tags: map[string]string{"from": "step", "to": "hpa"}}})
	if err != nil || len(out) != 1 || out[0].ID == 0 {
		t.Fatalf("commit: %v %+v", err, out)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	defer s.Close()
	ps, err := s.Policies()
	if err != nil || len(ps) != 2 {
		t.Fatalf("policies: %v %v", ps, err)
	}
	if ps[0].Group != "g1" || ps[0].Policy != "hpa" || string(ps[0].Spec) != string(spec) || !ps[0].Updated.Equal(t0) || ps[1].Zone != "b" {
		t.Fatalf("policies %+v", ps)
	}
	if got, err := s.Zone("g1", "a"); err != nil || got.MaxCount != 3 {
		t.Fatalf("zone committed with the policies: %+v %v", got, err)
	}
}

// TestCommitPoliciesIsAtomic: a bad entry leaves nothing written.
func TestCommitPoliciesIsAtomic(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "console.db"))
	defer s.Close()
	_, err := s.CommitPolicies([]store.ZonePolicy{{Group: "g1", Zone: "a", Policy: "hpa"}, {Group: "", Zone: "b", Policy: "hpa"}},
		[]store.Zone{{Group: "g1", Zone: "a", Count: 1, MaxCount: 1}}, []store.AuditEntry{{At: t0, Action: "workers.policy"}})
	if err == nil {
		t.Fatal("a policy without a group was accepted")
	}
	ps, _ := s.Policies()
	zs, _ := s.Zones()
	es, _ := s.Audit(store.AuditQuery{})
	if len(ps) != 0 || len(zs) != 0 || len(es) != 0 {
		t.Fatalf("partial commit: %d policies, %d zones, %d audit entries", len(ps), len(zs), len(es))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Policies(); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("closed store: %v, want ErrClosed", err)
	}
}
