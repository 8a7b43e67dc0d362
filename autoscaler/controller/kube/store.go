package kube

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// ConfigMapStore is the console's state on Kubernetes: one ConfigMap, whose
// "state.json" holds every zone (count, max, last change, last decision),
// the zones' policies, the scheduler configuration and the newest MaxAudit
// audit entries.
//
// Why a ConfigMap: during a rollout two console pods run at once and both
// serve the API, so the state must be shared and survive either pod; a
// bbolt file cannot be opened by two processes, and the kind cluster has no
// dynamic PersistentVolume provisioner. The API server is already the
// cluster's consistent store: every write is an Update with the
// resourceVersion last read (optimistic concurrency), so two pods never
// overwrite each other. A write that loses the race is re-applied to the
// fresh state when it touches no zone the other pod changed (audit appends,
// decisions, configuration, other zones); when it does, it fails with
// store.ErrConflict and the controller re-reads (controller.Resync) — the
// change was computed from an outdated zone and must not land.
//
// Reads come from memory, refreshed by a watch on the ConfigMap (Run); a
// change another pod made is reported through OnChange. Safe for
// concurrent use.
type ConfigMapStore struct {
	client  kubernetes.Interface
	ns      string
	name    string
	log     *slog.Logger
	timeout time.Duration

	mu   sync.Mutex
	st   cmState
	rv   string
	base map[string]store.Zone // each zone as this process's controller last read or wrote it

	changed chan struct{} // another writer changed the state; drained by Run
}

var _ store.Backend = (*ConfigMapStore)(nil)

// MaxAudit is how many audit entries the ConfigMap keeps (newest); older
// ones are dropped so the object stays well under the API server's 1 MiB.
const MaxAudit = 1000

// stateKey is the ConfigMap's data key.
const stateKey = "state.json"

// maxStateBytes is the encoded size beyond which older audit entries go.
const maxStateBytes = 800 << 10

type cmState struct {
	Zones         []store.Zone         `json:"zones"`
	Policies      []store.ZonePolicy   `json:"policies,omitempty"`
	AutoRebalance *store.AutoRebalance `json:"autorebalance,omitempty"`
	NextAuditID   uint64               `json:"next_audit_id"`
	Audit         []store.AuditEntry   `json:"audit"` // oldest first
}

func (s cmState) clone() cmState {
	b, _ := json.Marshal(s)
	var out cmState
	_ = json.Unmarshal(b, &out)
	return out
}

// StoreOptions tune OpenConfigMapStore.
type StoreOptions struct {
	Logger *slog.Logger // discard when nil
	// Timeout bounds each API call; 0 means 10 s.
	Timeout time.Duration
}

// OpenConfigMapStore reads (creating it empty if needed) the ConfigMap name
// in namespace.
func OpenConfigMapStore(ctx context.Context, client kubernetes.Interface, namespace, name string, o StoreOptions) (*ConfigMapStore, error) {
	s := &ConfigMapStore{client: client, ns: namespace, name: name, log: o.Logger, timeout: o.Timeout,
		base: map[string]store.Zone{}, changed: make(chan struct{}, 1)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.timeout <= 0 {
		s.timeout = 10 * time.Second
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.refreshLocked(ctx)
	if apierrors.IsNotFound(err) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "scaleproof", LabelComponent: "console"}},
			Data: map[string]string{stateKey: `{"zones":[],"next_audit_id":1,"audit":[]}`}}
		cctx, cancel := context.WithTimeout(ctx, s.timeout)
		_, err = client.CoreV1().ConfigMaps(namespace).Create(cctx, cm, metav1.CreateOptions{})
		cancel()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("kube store: create configmap %s/%s: %w", namespace, name, err)
		}
		err = s.refreshLocked(ctx)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// refreshLocked reads the ConfigMap into memory. Call with s.mu held.
func (s *ConfigMapStore) refreshLocked(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	cm, err := s.client.CoreV1().ConfigMaps(s.ns).Get(cctx, s.name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return err
		}
		return fmt.Errorf("kube store: get configmap %s/%s: %w", s.ns, s.name, err)
	}
	return s.applyLocked(cm)
}

// applyLocked makes cm the state in memory.
func (s *ConfigMapStore) applyLocked(cm *corev1.ConfigMap) error {
	var st cmState
	if raw := cm.Data[stateKey]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			return fmt.Errorf("kube store: configmap %s/%s key %s: %w", s.ns, s.name, stateKey, err)
		}
	}
	if st.NextAuditID == 0 {
		st.NextAuditID = 1
	}
	s.st, s.rv = st, cm.ResourceVersion
	return nil
}

// OnChange is notified (by Run) after another writer changed the state.
type OnChange func()

// Run keeps the memory in step with the ConfigMap until ctx ends: it
// watches the object, re-reads it when the watch ends (and every resync
// period as a safety net), and calls onChange (when non-nil) after a change
// this process did not make. Errors are logged; Run retries every second.
func (s *ConfigMapStore) Run(ctx context.Context, resync time.Duration, onChange OnChange) {
	if resync <= 0 {
		resync = 30 * time.Second
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.changed:
				if onChange != nil {
					onChange()
				}
			}
		}
	}()
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	for ctx.Err() == nil {
		s.mu.Lock()
		rv := s.rv
		s.mu.Unlock()
		wctx, cancel := context.WithTimeout(ctx, resync)
		w, err := s.client.CoreV1().ConfigMaps(s.ns).Watch(wctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", s.name).String(), ResourceVersion: rv})
		if err != nil {
			s.log.Warn("state watch", "err", err.Error())
		} else {
			s.consume(wctx, w)
			w.Stop()
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		before := s.rv
		err = s.refreshLocked(ctx)
		after := s.rv
		s.mu.Unlock()
		if err != nil {
			s.log.Warn("state re-read", "err", err.Error())
			select {
			case <-ctx.Done():
				return
			case <-retry.C:
			}
			continue
		}
		if before != after {
			s.notify()
		}
	}
}

// consume applies the watch's events until it ends or ctx does.
func (s *ConfigMapStore) consume(ctx context.Context, w watch.Interface) {
	for {
		var ev watch.Event
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.ResultChan():
			if !ok {
				return
			}
			ev = e
		}
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if !ok || cm.Name != s.name || (ev.Type != watch.Added && ev.Type != watch.Modified) {
			continue
		}
		s.mu.Lock()
		mine := cm.ResourceVersion == s.rv || !newerRV(cm.ResourceVersion, s.rv)
		var err error
		if !mine {
			err = s.applyLocked(cm)
		}
		s.mu.Unlock()
		if err != nil {
			s.log.Warn("state watch event", "err", err.Error())
			continue
		}
		if !mine {
			s.notify()
		}
	}
}

// newerRV reports whether resourceVersion a is later than b. They are
// opaque to clients, but the API server's are etcd revisions (integers);
// when either is not one, a is taken as newer.
func newerRV(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return true
	}
	return x > y
}

func (s *ConfigMapStore) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func zkey(group, zone string) string { return group + "\x00" + zone }

// sameZone compares what a write may be based on (not LastDecision, which
// only the scheduler sets and which merges by time).
func sameZone(a, b store.Zone) bool {
	return a.Group == b.Group && a.Zone == b.Zone && a.Count == b.Count && a.MaxCount == b.MaxCount &&
		a.LastChange.Equal(b.LastChange) && a.Created.Equal(b.Created)
}

// mutate applies fn to a copy of the state and writes it with the
// resourceVersion it was read at; on a conflict it re-reads and applies fn
// again (at most 5 times). fn may refuse with an error (store.ErrConflict).
func (s *ConfigMapStore) mutate(op string, fn func(st *cmState) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx := context.Background()
	var lastErr error
	for range 5 {
		next := s.st.clone()
		if err := fn(&next); err != nil {
			return fmt.Errorf("kube store: %s: %w", op, err)
		}
		data, err := encodeState(&next)
		if err != nil {
			return fmt.Errorf("kube store: %s: %w", op, err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.ns, ResourceVersion: s.rv,
			Labels: map[string]string{"app.kubernetes.io/name": "scaleproof", LabelComponent: "console"}},
			Data: map[string]string{stateKey: data}}
		cctx, cancel := context.WithTimeout(ctx, s.timeout)
		out, err := s.client.CoreV1().ConfigMaps(s.ns).Update(cctx, cm, metav1.UpdateOptions{})
		cancel()
		if err == nil {
			s.st, s.rv = next, out.ResourceVersion
			return nil
		}
		if !apierrors.IsConflict(err) {
			return fmt.Errorf("kube store: %s: update configmap %s/%s: %w", op, s.ns, s.name, err)
		}
		lastErr = err
		if err := s.refreshLocked(ctx); err != nil {
			return fmt.Errorf("kube store: %s: %w", op, err)
		}
		s.notify()
	}
	return fmt.Errorf("kube store: %s: still conflicting after 5 tries: %w", op, lastErr)
}

// encodeState marshals st, dropping the oldest audit entries until it fits.
func encodeState(st *cmState) (string, error) {
	if n := len(st.Audit) - MaxAudit; n > 0 {
		st.Audit = st.Audit[n:]
	}
	for {
		b, err := json.Marshal(st)
		if err != nil {
			return "", err
		}
		if len(b) <= maxStateBytes || len(st.Audit) == 0 {
			if len(b) > maxStateBytes {
				return "", fmt.Errorf("state is %d bytes without any audit entries, over %d", len(b), maxStateBytes)
			}
			return string(b), nil
		}
		st.Audit = st.Audit[len(st.Audit)/2+1:]
	}
}

// putZones writes zones into st, failing with store.ErrConflict when a
// zone changed since this process last read or wrote it. Call from mutate.
func (s *ConfigMapStore) putZones(st *cmState, zones []store.Zone) error {
	for _, z := range zones {
		if z.Group == "" || z.Zone == "" {
			return fmt.Errorf("zone %q/%q: empty group or zone", z.Group, z.Zone)
		}
		k := zkey(z.Group, z.Zone)
		i := slices.IndexFunc(st.Zones, func(o store.Zone) bool { return zkey(o.Group, o.Zone) == k })
		base, seen := s.base[k]
		if i >= 0 && (!seen || !sameZone(st.Zones[i], base)) {
			return fmt.Errorf("zone %s/%s: %w", z.Group, z.Zone, store.ErrConflict)
		}
		if i >= 0 {
			st.Zones[i] = z
		} else {
			st.Zones = append(st.Zones, z)
		}
	}
	slices.SortFunc(st.Zones, func(a, b store.Zone) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Zone, b.Zone))
	})
	return nil
}

func appendAudits(st *cmState, audits []store.AuditEntry) []store.AuditEntry {
	out := make([]store.AuditEntry, len(audits))
	copy(out, audits)
	for i := range out {
		out[i].ID = st.NextAuditID
		st.NextAuditID++
		st.Audit = append(st.Audit, out[i])
	}
	return out
}

// Ready returns nil: the state is in memory once opened.
func (s *ConfigMapStore) Ready() error { return nil }

// Zones lists every zone and records them as what this process's
// controller now bases its writes on.
func (s *ConfigMapStore) Zones() ([]store.Zone, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.st.Zones)
	for _, z := range out {
		s.base[zkey(z.Group, z.Zone)] = z
	}
	return out, nil
}

// Commit writes zones and appends audits in one Update.
func (s *ConfigMapStore) Commit(zones []store.Zone, audits []store.AuditEntry) ([]store.AuditEntry, error) {
	return s.CommitPolicies(nil, zones, audits)
}

// AppendAudit appends one entry.
func (s *ConfigMapStore) AppendAudit(e store.AuditEntry) (store.AuditEntry, error) {
	out, err := s.CommitPolicies(nil, nil, []store.AuditEntry{e})
	if err != nil {
		return store.AuditEntry{}, err
	}
	return out[0], nil
}

// CommitPolicies writes policies and zones and appends audits in one Update.
func (s *ConfigMapStore) CommitPolicies(policies []store.ZonePolicy, zones []store.Zone, audits []store.AuditEntry) ([]store.AuditEntry, error) {
	var out []store.AuditEntry
	err := s.mutate("commit", func(st *cmState) error {
		if err := s.putZones(st, zones); err != nil {
			return err
		}
		for _, p := range policies {
			if p.Group == "" || p.Zone == "" {
				return fmt.Errorf("policy %q/%q: empty group or zone", p.Group, p.Zone)
			}
			k := zkey(p.Group, p.Zone)
			if i := slices.IndexFunc(st.Policies, func(o store.ZonePolicy) bool { return zkey(o.Group, o.Zone) == k }); i >= 0 {
				st.Policies[i] = p
			} else {
				st.Policies = append(st.Policies, p)
			}
		}
		slices.SortFunc(st.Policies, func(a, b store.ZonePolicy) int {
			return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Zone, b.Zone))
		})
		out = appendAudits(st, audits)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, z := range zones {
		s.mu.Lock()
		s.base[zkey(z.Group, z.Zone)] = z
		s.mu.Unlock()
	}
	return out, nil
}

// SetLastDecisions records each zone's last decision; a missing zone is
// skipped and an older decision never overwrites a newer one.
func (s *ConfigMapStore) SetLastDecisions(ds []store.ZoneDecision) error {
	if len(ds) == 0 {
		return nil
	}
	return s.mutate("set last decisions", func(st *cmState) error {
		for _, d := range ds {
			i := slices.IndexFunc(st.Zones, func(o store.Zone) bool { return o.Group == d.Group && o.Zone == d.Zone })
			if i < 0 {
				continue
			}
			if ld := st.Zones[i].LastDecision; ld != nil && ld.At.After(d.Decision.At) {
				continue
			}
			dec := d.Decision
			st.Zones[i].LastDecision = &dec
		}
		return nil
	})
}

// Audit returns the entries matching q, newest first.
func (s *ConfigMapStore) Audit(q store.AuditQuery) ([]store.AuditEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []store.AuditEntry{}
	for i := len(s.st.Audit) - 1; i >= 0 && len(out) < q.MaxEntries(); i-- {
		if e := s.st.Audit[i]; q.Matches(e) {
			out = append(out, e)
		}
	}
	return out, nil
}

// AutoRebalance reads the scheduler configuration (off, 60 s by default).
func (s *ConfigMapStore) AutoRebalance() (store.AutoRebalance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.AutoRebalance == nil {
		return store.AutoRebalance{Enabled: false, Interval: store.DefaultInterval}, nil
	}
	return *s.st.AutoRebalance, nil
}

// SetAutoRebalance writes the scheduler configuration and appends audits.
func (s *ConfigMapStore) SetAutoRebalance(c store.AutoRebalance, audits ...store.AuditEntry) ([]store.AuditEntry, error) {
	if c.Interval <= 0 {
		return nil, fmt.Errorf("kube store: set config: interval %s must be > 0", c.Interval)
	}
	var out []store.AuditEntry
	err := s.mutate("set config", func(st *cmState) error {
		cc := c
		st.AutoRebalance = &cc
		out = appendAudits(st, audits)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Policies lists every zone's stored policy.
func (s *ConfigMapStore) Policies() ([]store.ZonePolicy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.st.Policies), nil
}
