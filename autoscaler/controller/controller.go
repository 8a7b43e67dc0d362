package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// Actor of the scheduler's rounds in the audit log and logs.
const ActorScheduler = "scheduler"

// Audit actions (Ramen 0.7.5's autoscaling notes, "Audit and logs").
const (
	AuditAutoscale     = "workers.autoscale"
	AuditMaxCount      = "workers.max_count"
	AuditCount         = "workers.count"
	AuditRebalance     = "workers.rebalance"
	AuditAutoRebalance = "config.autorebalance"
)

// Audit error tags of refused requests.
const (
	RefusedForbidden = "forbidden"
	RefusedInvalid   = "invalid"
)

// Bounds of the API's values.
const (
	// MaxCountLimit caps a zone's max so a typo cannot ask a platform for a
	// million workers.
	MaxCountLimit = 1000
	// MaxInterval caps the scheduler interval.
	MaxInterval = time.Hour
	// MinInterval is the shortest scheduler interval: below it a pass over
	// every zone would run back to back and burn a core (time-scaled test
	// profiles use 2 s; the published load test 20 s).
	MinInterval = 100 * time.Millisecond
	// DefaultConcurrency is how many zones a scheduler pass works on at once.
	DefaultConcurrency = 16
)

// Errors a caller can test with errors.Is.
var (
	// ErrNotFound: the zone does not exist (no admin created it).
	ErrNotFound = errors.New("zone not found")
	// ErrScale: the scale target refused or could not be reached.
	ErrScale = errors.New("scale target failed")
	// ErrDiscovery: discovery failed.
	ErrDiscovery = errors.New("discovery failed")
	// ErrStore: the state store failed (closed, disk error).
	ErrStore = errors.New("state store failed")
)

// ValidationError is a value out of its range (HTTP 422).
type ValidationError struct {
	Field  string // "count", "max_count", "interval_seconds", "group", "zone"
	Reason string
}

func (e *ValidationError) Error() string { return e.Field + ": " + e.Reason }

var nameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,62})$`)

// ValidName reports whether s is a valid group or zone name: 1 to 63
// letters, digits, '.', '_' or '-', starting with a letter or digit.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// checkNames is nil for a valid group and zone (ValidName), else a
// *ValidationError on the first invalid one: "group: invalid name" or "zone: …".
func checkNames(group, zone string) error {
	if !ValidName(group) {
		return &ValidationError{Field: "group", Reason: "invalid name"}
	}
	if !ValidName(zone) {
		return &ValidationError{Field: "zone", Reason: "invalid name"}
	}
	return nil
}

// Options configure New. Store, Target, Discovery, Scraper and Policy are
// required.
type Options struct {
	Store     store.Backend
	Target    ScaleTarget
	Discovery Discovery
	Scraper   Scraper
	Policy    Policy
	// StartupGrace: a worker discovery lists as not ready and younger than
	// this is starting (WorkerSample.Starting). Use the policy's grace.
	StartupGrace time.Duration
	Clock        Clock        // SystemClock when nil
	Tickers      TickerSource // SystemClock when nil
	Logger       *slog.Logger // slog.Default() when nil
	// Concurrency is how many zones a scheduler pass works on at once;
	// DefaultConcurrency when <= 0.
	Concurrency int
	// OnPass, when set, is called after each scheduler pass (tests wait on
	// it instead of sleeping).
	OnPass func(PassReport)
	// Metrics answers the queries of hpa zones (hpa_round.go); nil: every
	// hpa round reads a failed metric and holds.
	Metrics MetricSource
	// Faults are planted bugs (autoscaler/faults) for the self-test; nil in
	// every real run. New honours forget-cooldown-on-restart; the policy's
	// faults come with StepPolicyWithFaults (faults.go) and FaultyPolicy
	// (faults_round.go).
	Faults faults.Set
}

// Controller runs rounds and forced changes over the zones of the store.
type Controller struct {
	o   Options
	log *slog.Logger

	mu    sync.RWMutex // guards zones (the map, not the entries)
	zones map[string]*zoneEntry

	cfgMu      sync.Mutex // serialises config changes; guards cfg
	cfg        store.AutoRebalance
	cfgChanged chan struct{}
	running    atomic.Bool // a scheduler runs

	decisions sync.Map // autoscaler.Action -> *atomic.Uint64

	hpa *hpaZones // each zone's policy (policy.go, hpa_round.go)
	// steps keeps each step zone's last rounds (step_round.go).
	steps stepRounds
}

// zoneEntry is one zone. mu serialises every operation on the zone; the
// view is a snapshot readers take without waiting for a round.
type zoneEntry struct {
	mu     sync.Mutex
	exists bool // guarded by mu: false for a zone being created or removed
	z      store.Zone
	st     autoscaler.ZoneState // Count, Max, LastChange mirror z
	dirty  bool                 // z.LastDecision (a hold) not yet persisted
	view   atomic.Pointer[ZoneView]
	// lingered counts the step downs held by the linger fault (faults.go).
	lingered int
}

// ZoneView is a zone as the API shows it.
type ZoneView struct {
	Group        string               `json:"group"`
	Zone         string               `json:"zone"`
	Count        int                  `json:"count"`
	MaxCount     int                  `json:"max_count"`
	LastChange   time.Time            `json:"last_change"`
	LastDecision *autoscaler.Decision `json:"last_decision,omitempty"`
	// LastScale is the last decision that changed the count (store.Zone).
	LastScale *autoscaler.Decision `json:"last_scale,omitempty"`
	// Ready and Starting count the zone's workers as last seen (a round, or
	// ZoneLive): the stable workers the count asks for, not a canary.
	// ObservedAt is when, zero if never.
	Ready      int       `json:"ready"`
	Starting   int       `json:"starting"`
	ObservedAt time.Time `json:"observed_at"`
	// Workers lists every worker as last seen, the canary included (and
	// marked), in discovery order.
	Workers []WorkerView `json:"workers"`
}

// WorkerView is one worker of a zone as last seen. A round fills every
// field from its scrape; ZoneLive takes readiness from discovery and keeps
// the last round's in-flight and limit (0 for a worker no round has seen).
type WorkerView struct {
	ID string `json:"id"`
	// Canary: the zone's canary worker (another version beside the stable
	// ones): capacity like any worker, not part of the count, never a
	// scale-in victim.
	Canary    bool `json:"canary"`
	Ready     bool `json:"ready"`
	Starting  bool `json:"starting,omitempty"`
	Reachable bool `json:"reachable"` // answered its last scrape
	InFlight  int  `json:"in_flight"` // calls in flight at the last scrape
	Limit     int  `json:"limit"`     // its in-flight limit at the last scrape
}

func key(group, zone string) string { return group + "\x00" + zone }

// New loads the zones and the scheduler configuration from the store.
func New(o Options) (*Controller, error) {
	switch {
	case o.Store == nil:
		return nil, errors.New("controller: no store")
	case o.Target == nil:
		return nil, errors.New("controller: no scale target")
	case o.Discovery == nil:
		return nil, errors.New("controller: no discovery")
	case o.Scraper == nil:
		return nil, errors.New("controller: no scraper")
	case o.Policy == nil:
		return nil, errors.New("controller: no policy")
	case o.StartupGrace < 0:
		return nil, fmt.Errorf("controller: startup grace %s < 0", o.StartupGrace)
	}
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	if o.Tickers == nil {
		o.Tickers = SystemClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	c := &Controller{o: o, log: o.Logger, zones: map[string]*zoneEntry{}, cfgChanged: make(chan struct{}, 1)}
	zs, err := o.Store.Zones()
	if err != nil {
		return nil, fmt.Errorf("controller: load zones: %w: %w", ErrStore, err)
	}
	for _, z := range zs {
		if o.Faults.On(faults.ForgetCooldownOnRestart) {
			z.LastChange = time.Time{}
		}
		e := &zoneEntry{exists: true, z: z}
		e.st = autoscaler.ZoneState{Count: z.Count, Max: z.MaxCount, LastChange: z.LastChange}
		e.publish(nil)
		c.zones[key(z.Group, z.Zone)] = e
	}
	cfg, err := o.Store.AutoRebalance()
	if err != nil {
		return nil, fmt.Errorf("controller: load config: %w: %w", ErrStore, err)
	}
	c.cfg = cfg
	specs, _, err := storedHPA(o.Store, "controller: load")
	if err != nil {
		return nil, err
	}
	c.hpa = &hpaZones{zones: map[string]*hpaZone{}}
	for k, spec := range specs {
		c.hpa.zones[k] = &hpaZone{spec: spec}
	}
	return c, nil
}

// publish refreshes the entry's view from z; obs, when non-nil, updates the
// worker counts. Call with e.mu held (or before the entry is shared).
//
// A hold not yet stored (dirty) is not shown: the view keeps the last
// decision it showed until Pass has stored the hold, so a decision a reader
// saw survives a crash of the console (kill -9 between the round and the
// pass's write would otherwise lose a decision already shown).
func (e *zoneEntry) publish(obs *ZoneView) {
	v := ZoneView{
		Group: e.z.Group, Zone: e.z.Zone, Count: e.z.Count, MaxCount: e.z.MaxCount,
		LastChange: e.z.LastChange, LastDecision: e.z.LastDecision, LastScale: e.z.LastScale,
	}
	old := e.view.Load()
	if e.dirty {
		v.LastDecision = nil
		if old != nil {
			v.LastDecision = old.LastDecision
		}
	}
	if old != nil {
		v.Ready, v.Starting, v.ObservedAt, v.Workers = old.Ready, old.Starting, old.ObservedAt, old.Workers
	}
	if obs != nil {
		v.Ready, v.Starting, v.ObservedAt, v.Workers = obs.Ready, obs.Starting, obs.ObservedAt, obs.Workers
	}
	e.view.Store(&v)
}

func (c *Controller) lookup(group, zone string) *zoneEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.zones[key(group, zone)]
}

// lock returns the existing zone's entry, locked; ErrNotFound otherwise.
func (c *Controller) lock(group, zone string) (*zoneEntry, error) {
	e := c.lookup(group, zone)
	if e == nil {
		return nil, fmt.Errorf("%s/%s: %w", group, zone, ErrNotFound)
	}
	e.mu.Lock()
	if !e.exists {
		e.mu.Unlock()
		return nil, fmt.Errorf("%s/%s: %w", group, zone, ErrNotFound)
	}
	return e, nil
}

// lockOrCreate returns the zone's entry, locked, inserting an empty one
// (exists false) when the zone is new.
func (c *Controller) lockOrCreate(group, zone string) *zoneEntry {
	for {
		k := key(group, zone)
		c.mu.Lock()
		e := c.zones[k]
		if e == nil {
			e = &zoneEntry{z: store.Zone{Group: group, Zone: zone}}
			e.mu.Lock()
			c.zones[k] = e
			c.mu.Unlock()
			return e
		}
		c.mu.Unlock()
		e.mu.Lock()
		if e.exists || c.lookup(group, zone) == e {
			return e
		}
		e.mu.Unlock() // removed while we waited: retry with the new entry
	}
}

// abandon undoes lockOrCreate for a zone whose creation failed, and unlocks.
func (c *Controller) abandon(e *zoneEntry) {
	if !e.exists {
		c.mu.Lock()
		if c.zones[key(e.z.Group, e.z.Zone)] == e {
			delete(c.zones, key(e.z.Group, e.z.Zone))
		}
		c.mu.Unlock()
	}
	e.mu.Unlock()
}

// Zone returns the zone as last seen, without waiting for a running round.
func (c *Controller) Zone(group, zone string) (ZoneView, error) {
	e := c.lookup(group, zone)
	if e == nil {
		return ZoneView{}, fmt.Errorf("%s/%s: %w", group, zone, ErrNotFound)
	}
	v := e.view.Load()
	if v == nil || v.MaxCount == 0 { // created but not committed yet
		return ZoneView{}, fmt.Errorf("%s/%s: %w", group, zone, ErrNotFound)
	}
	return *v, nil
}

// ZoneLive returns the zone with Ready and Starting read from discovery now.
// When discovery fails it returns the last seen counts and the error
// (wrapping ErrDiscovery) along with the view.
func (c *Controller) ZoneLive(ctx context.Context, group, zone string) (ZoneView, error) {
	v, err := c.Zone(group, zone)
	if err != nil {
		return v, err
	}
	eps, err := c.o.Discovery.Endpoints(ctx, group, zone)
	if err != nil {
		return v, fmt.Errorf("%s/%s: %w: %w", group, zone, ErrDiscovery, err)
	}
	now := c.o.Clock.Now()
	last := map[string]WorkerView{}
	for _, w := range v.Workers {
		last[w.ID] = w
	}
	v.Ready, v.Starting, v.ObservedAt = 0, 0, now
	v.Workers = make([]WorkerView, 0, len(eps))
	for _, ep := range eps {
		w := WorkerView{ID: ep.ID, Canary: ep.Canary, Ready: ep.Ready, Starting: !ep.Ready && c.starting(ep.Created, now)}
		if l, ok := last[ep.ID]; ok {
			w.Reachable, w.InFlight, w.Limit = l.Reachable, l.InFlight, l.Limit
		}
		v.Workers = append(v.Workers, w)
		switch {
		case ep.Canary:
		case w.Ready:
			v.Ready++
		case w.Starting:
			v.Starting++
		}
	}
	return v, nil
}

// Zones returns every zone as last seen, sorted by group and zone.
func (c *Controller) Zones() []ZoneView {
	c.mu.RLock()
	out := make([]ZoneView, 0, len(c.zones))
	for _, e := range c.zones {
		if v := e.view.Load(); v != nil && v.MaxCount > 0 {
			out = append(out, *v)
		}
	}
	c.mu.RUnlock()
	slices.SortFunc(out, func(a, b ZoneView) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Zone, b.Zone))
	})
	return out
}

func (c *Controller) starting(created, now time.Time) bool {
	return !created.IsZero() && now.Sub(created) < c.o.StartupGrace
}

// DecisionCounts returns how many decisions of each action were taken since
// start (holds included; "set" for forced changes).
func (c *Controller) DecisionCounts() map[autoscaler.Action]uint64 {
	out := map[autoscaler.Action]uint64{}
	c.decisions.Range(func(k, v any) bool {
		out[k.(autoscaler.Action)] = v.(*atomic.Uint64).Load()
		return true
	})
	return out
}

func (c *Controller) countDecision(a autoscaler.Action) {
	v, ok := c.decisions.Load(a)
	if !ok {
		v, _ = c.decisions.LoadOrStore(a, new(atomic.Uint64))
	}
	v.(*atomic.Uint64).Add(1)
}

// Refused appends the audit entry of a refused request (reason
// RefusedForbidden or RefusedInvalid) and returns the store's error, if any.
func (c *Controller) Refused(actor, group, zone, action, reason, detail string) error {
	e := store.AuditEntry{
		At: c.o.Clock.Now(), Actor: actor, Group: group, Zone: zone, Action: action,
		Tags: map[string]string{"error": reason}, Error: reason,
	}
	if detail != "" {
		e.Tags["detail"] = detail
	}
	if _, err := c.o.Store.AppendAudit(e); err != nil {
		c.log.Error("audit refused request", "action", action, "group", group, "zone", zone, "actor", actor, "err", err)
		return fmt.Errorf("audit refused %s: %w: %w", action, ErrStore, err)
	}
	c.log.Info("refused", "action", action, "group", group, "zone", zone, "actor", actor, "error", reason, "detail", detail)
	return nil
}

func itoa(n int) string { return strconv.Itoa(n) }
