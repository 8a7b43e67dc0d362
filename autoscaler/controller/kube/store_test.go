package kube_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/controller/kube"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// rvClientset is a fake clientset whose ConfigMaps carry resourceVersions
// and refuse an Update at an outdated one, as the API server does.
func rvClientset() *fake.Clientset {
	c := fake.NewClientset()
	var mu sync.Mutex
	rv := 0
	c.PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		rv++
		a.(k8stesting.CreateAction).GetObject().(*corev1.ConfigMap).ResourceVersion = strconv.Itoa(rv)
		return false, nil, nil
	})
	c.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		cm := a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap)
		cur, err := c.Tracker().Get(corev1.SchemeGroupVersion.WithResource("configmaps"), cm.Namespace, cm.Name)
		if err != nil {
			return true, nil, err
		}
		if cur.(*corev1.ConfigMap).ResourceVersion != cm.ResourceVersion {
			return true, nil, apierrors.NewConflict(corev1.Resource("configmaps"), cm.Name, errors.New("outdated resourceVersion"))
		}
		rv++
		cm.ResourceVersion = strconv.Itoa(rv)
		return false, nil, nil
	})
	return c
}

func openStore(t *testing.T, c *fake.Clientset) *kube.ConfigMapStore {
	t.Helper()
	s, err := kube.OpenConfigMapStore(context.Background(), c, "sp", "state", kube.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConfigMapStoreSharedByTwoPods(t *testing.T) {
	c := rvClientset()
	a := openStore(t, c)
	z := store.Zone{Group: "g", Zone: "a", Count: 1, MaxCount: 3, LastChange: t0, Created: t0}
	if _, err := a.Zones(); err != nil {
		t.Fatal(err)
	}
	es, err := a.Commit([]store.Zone{z}, []store.AuditEntry{{At: t0, Actor: "root", Group: "g", Zone: "a", Action: "workers.max_count"}})
	if err != nil || es[0].ID != 1 {
		t.Fatalf("commit: %v %+v", err, es)
	}

	// The second pod starts: it sees the zone and the audit, and its IDs follow.
	b := openStore(t, c)
	zs, _ := b.Zones()
	if len(zs) != 1 || zs[0].MaxCount != 3 || !zs[0].LastChange.Equal(t0) {
		t.Fatalf("second pod reads %+v", zs)
	}
	if e, err := b.AppendAudit(store.AuditEntry{At: t0, Actor: "viewer", Action: "workers.max_count", Error: "forbidden"}); err != nil || e.ID != 2 {
		t.Fatalf("append from the second pod: %+v %v", e, err)
	}

	// The first pod scales (its version is outdated: the append above). A
	// write touching no zone the other changed is re-applied to the fresh
	// state and lands; nothing is lost.
	z2 := z
	z2.Count, z2.LastChange = 2, t0.Add(time.Minute)
	if _, err := a.Commit([]store.Zone{z2}, []store.AuditEntry{{At: t0.Add(time.Minute), Actor: "scheduler", Group: "g", Zone: "a", Action: "workers.autoscale"}}); err != nil {
		t.Fatal(err)
	}
	au, _ := a.Audit(store.AuditQuery{})
	if len(au) != 3 || au[0].ID != 3 || au[1].Actor != "viewer" {
		t.Errorf("audit after the retried commit: %+v", au)
	}

	// The second pod still bases its change on count 1: refused, not landed.
	stale := z
	stale.MaxCount = 5
	if _, err := b.Commit([]store.Zone{stale}, nil); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a write based on an outdated zone: %v, want ErrConflict", err)
	}
	// After re-reading (what controller.Resync does) it lands on count 2.
	zs, _ = b.Zones()
	fresh := zs[0]
	if fresh.Count != 2 {
		t.Fatalf("re-read %+v", fresh)
	}
	fresh.MaxCount = 5
	if _, err := b.Commit([]store.Zone{fresh}, nil); err != nil {
		t.Fatal(err)
	}

	// A third pod (a restart) reads everything back.
	r := openStore(t, c)
	zs, _ = r.Zones()
	if zs[0].Count != 2 || zs[0].MaxCount != 5 || !zs[0].LastChange.Equal(t0.Add(time.Minute)) {
		t.Errorf("after restart: %+v", zs[0])
	}
	if au, _ := r.Audit(store.AuditQuery{Group: "g"}); len(au) != 2 {
		t.Errorf("audit of g after restart: %+v", au)
	}
}

func TestConfigMapStoreConfigPoliciesDecisions(t *testing.T) {
	c := rvClientset()
	s := openStore(t, c)
	if ar, _ := s.AutoRebalance(); ar.Enabled || ar.Interval != store.DefaultInterval {
		t.Errorf("default config %+v", ar)
	}
	if _, err := s.SetAutoRebalance(store.AutoRebalance{Interval: 0}); err == nil {
		t.Error("interval 0 accepted")
	}
	if _, err := s.SetAutoRebalance(store.AutoRebalance{Enabled: true, Interval: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	z := store.Zone{Group: "g", Zone: "a", Count: 1, MaxCount: 3}
	if _, err := s.CommitPolicies([]store.ZonePolicy{{Group: "g", Zone: "a", Policy: "hpa", Spec: []byte(`{"threshold":1}`)}}, []store.Zone{z}, nil); err != nil {
		t.Fatal(err)
	}
	newer := autoscaler.Decision{Action: autoscaler.ActionHold, At: t0.Add(time.Second)}
	older := autoscaler.Decision{Action: autoscaler.ActionHold, At: t0}
	if err := s.SetLastDecisions([]store.ZoneDecision{{Group: "g", Zone: "a", Decision: newer}, {Group: "g", Zone: "gone", Decision: newer}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetLastDecisions([]store.ZoneDecision{{Group: "g", Zone: "a", Decision: older}}); err != nil {
		t.Fatal(err)
	}
	r := openStore(t, c)
	ar, _ := r.AutoRebalance()
	ps, _ := r.Policies()
	zs, _ := r.Zones()
	if !ar.Enabled || ar.Interval != 2*time.Second || len(ps) != 1 || ps[0].Policy != "hpa" || len(zs) != 1 ||
		zs[0].LastDecision == nil || !zs[0].LastDecision.At.Equal(newer.At) {
		t.Errorf("read back: %+v %+v %+v", ar, ps, zs)
	}
}

func TestConfigMapStoreAuditBounded(t *testing.T) {
	s := openStore(t, rvClientset())
	batch := make([]store.AuditEntry, 300)
	for i := range batch {
		batch[i] = store.AuditEntry{At: t0, Actor: "root", Group: "g", Zone: "a", Action: "workers.count"}
	}
	for range 4 {
		if _, err := s.Commit(nil, batch); err != nil {
			t.Fatal(err)
		}
	}
	all, _ := s.Audit(store.AuditQuery{Limit: 5000})
	if len(all) != kube.MaxAudit || all[0].ID != 1200 || all[len(all)-1].ID != 201 {
		t.Errorf("kept %d entries, newest %d oldest %d; want %d, 1200, 201", len(all), all[0].ID, all[len(all)-1].ID, kube.MaxAudit)
	}
	if l, _ := s.Audit(store.AuditQuery{Limit: 3, Action: "workers.count"}); len(l) != 3 {
		t.Errorf("limit 3 gave %d", len(l))
	}
}

// TestConfigMapStoreWatch: a change another pod makes reaches this one's
// memory and its OnChange without any write of its own.
func TestConfigMapStoreWatch(t *testing.T) {
	c := rvClientset()
	a, b := openStore(t, c), openStore(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	changed := make(chan struct{}, 16)
	done := make(chan struct{})
	go func() { defer close(done); b.Run(ctx, time.Minute, func() { changed <- struct{}{} }) }()
	defer func() { cancel(); <-done }()

	if _, err := a.Commit([]store.Zone{{Group: "g", Zone: "a", Count: 1, MaxCount: 2}}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no change reported")
	}
	if zs, _ := b.Zones(); len(zs) != 1 || zs[0].MaxCount != 2 {
		t.Errorf("after the change: %+v", zs)
	}
}
