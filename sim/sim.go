package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/autoscaler/store"
	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
)

// Config is one simulated run.
type Config struct {
	// Profile is the harness's profile: the scheduler interval, the load's
	// VUs, phase lengths and timeouts (scenarios.Published, Quick).
	Profile scenarios.Profile
	// Policy is the policy every zone is created with: scenarios.PolicyStep
	// or scenarios.PolicyHPA.
	Policy string
	// Step is the step policy's configuration (NewConfig takes the
	// profile's cooldowns, grace and target rate, as the local platform
	// starts its console).
	Step autoscaler.StepConfig
	// HPA is the hpa zones' settings and the signal's timings.
	HPA scenarios.HPASettings
	// Model is the simulated platform.
	Model Model
	// Seed seeds every draw: the same Config gives the same results.
	Seed uint64
	// Scenarios names the scenarios to run; empty: the five (and spike
	// with the hpa policy).
	Scenarios []string
	// Group is the group of every zone; Platform the table's Platform.
	Group, Platform string
	// Concurrency is the controller's pass concurrency (0: its default).
	Concurrency int
	// SchedulerPhase is when the first scheduler pass runs, from the run's
	// start; later passes follow every SchedulerInterval. 0: one interval
	// after the start, as a scheduler enabled at the start ticks.
	// Calibration fits it to a real run.
	SchedulerPhase time.Duration
	// Faults are the controller's planted bugs (autoscaler/faults), for a
	// test of what the simulator's verdicts catch; nil in a real use.
	Faults faults.Set
	// OneZone runs the scenarios in order on one zone, as Ramen 0.7.5's
	// load test did ("against one zone with max 3"): each scenario sets
	// count 1 and its max on the zone the previous one left, with its
	// workers, nodes and cooldowns. False (the harness's way): each
	// scenario creates a zone of its own.
	OneZone bool
}

// NewConfig is the simulated counterpart of `scaleproof run --profile p` on
// the local platform: the step policy with the profile's settings and
// LocalModel, seed 1.
func NewConfig(p scenarios.Profile) Config {
	step := autoscaler.DefaultStepConfig()
	step.UpCooldown, step.DownCooldown, step.StartupGrace, step.TargetRPS = p.UpCooldown, p.DownCooldown, p.StartupGrace, p.TargetRPS
	return Config{Profile: p, Policy: scenarios.PolicyStep, Step: step, HPA: scenarios.HPAFor(p),
		Model: LocalModel(p), Seed: 1, Group: "sim", Platform: "sim"}
}

// LocalModel models the local platform: a worker process per replica,
// ready in discovery after the profile's boot delay plus its start and a
// readiness probe (500 ms), routed by the edge within its 500 ms discovery
// refresh; a call holds a worker for the profile's call length plus a
// little overhead; a round reads the clock up to 100 ms after its tick
// (discovery and scrapes over loopback). Calibrate refines Service and ReadyDelay from a real run.
func LocalModel(p scenarios.Profile) Model {
	return Model{
		Limit:      p.MaxInflight,
		PassJitter: 100 * time.Millisecond,
		Service:    Dist{Base: time.Duration(p.WorkMS) * time.Millisecond, Jitter: 3 * time.Millisecond},
		RTT:        time.Millisecond,
		ReadyDelay: Dist{Base: p.BootDelay + 200*time.Millisecond, Jitter: 250 * time.Millisecond},
		EdgeLag:    500 * time.Millisecond,
		RetryAfter: time.Second,
		RetryCap:   time.Second,
	}
}

// CloudModel models a managed Kubernetes cluster as Ramen 0.7.5's clouds run
// it: each worker needs a node of its own that the cluster autoscaler adds
// (about 90 s, GKE's usual), then the pod starts and passes its readiness
// probe (about 20 s: image, boot, probe period); an idle node goes after
// 10 min (the cluster autoscaler's scale-down-unneeded-time); calls cross
// a real network (20 ms). These are assumptions, not measurements.
func CloudModel(p scenarios.Profile) Model {
	m := LocalModel(p)
	m.RTT = 20 * time.Millisecond
	m.ReadyDelay = Dist{Base: 15 * time.Second, Jitter: 5 * time.Second}
	m.EdgeLag = 5 * time.Second
	m.PassJitter = 500 * time.Millisecond
	m.PodsPerNode, m.NodeDelay, m.NodeIdle = 1, 90*time.Second, 10*time.Minute
	return m
}

// Clouds names the fitted cloud models of PublishedCloud, in the published
// table's order.
var Clouds = []string{"gke", "eks", "aks"}

// PublishedCloud is the run Ramen 0.7.5's load test made on one cloud
// ("gke", "eks" or "aks"), as far as its notes tell it and the published
// current-design row fits it. It is CloudModel with:
//
//   - a canary (Model.Canary 1): "A zone at count 1 runs two pods (stable
//     and canary)";
//   - the load generator away from the cluster (Model.ClientRTT 300 ms plus
//     a 50 ms mean jitter): the published calls ok (25 909 on GKE against
//     64 702 locally) say every call took far longer than its 200 ms, and
//     300 ms is about the most at which the 64 VUs still trip an up
//     threshold at count 1 (at 400 ms the zone never scales in the sim,
//     while every cloud reached 3);
//   - one zone for the five scenarios, made before the run (Config.OneZone),
//     as the load test ran "against one zone";
//   - a node provisioning time fitted to the row's back to 1: GKE 370 s,
//     EKS 245 s, AKS 235 s (the time until the third worker serves, which
//     with the 60 s hold and the down steps sets back to 1).
//
// Its profile is p; the policy and the seed are NewConfig's.
func PublishedCloud(name string, p scenarios.Profile) (Config, error) {
	nodes := map[string]time.Duration{"gke": 370 * time.Second, "eks": 245 * time.Second, "aks": 235 * time.Second}
	d, ok := nodes[name]
	if !ok {
		return Config{}, fmt.Errorf("sim: no cloud %q (have: %s)", name, strings.Join(Clouds, ", "))
	}
	cfg := NewConfig(p)
	cfg.Model = CloudModel(p)
	cfg.Model.Canary = 1
	cfg.Model.ClientRTT = Dist{Base: 300 * time.Millisecond, Jitter: 50 * time.Millisecond}
	cfg.Model.NodeDelay = d
	cfg.OneZone = true
	return cfg, nil
}

// Record is one record of the results file, in order.
type Record struct {
	Kind string
	Data any
}

// Outcome is what a sweep or a calibration reads of one scenario: its
// times in seconds from its start (-1: never), its calls, and its cost in
// replica-seconds (the count integrated over the scenario's samples).
type Outcome struct {
	Scenario  string        `json:"scenario"`
	StartS    float64       `json:"start_s"` // from the run's start
	UpToMaxS  float64       `json:"up_to_max_s"`
	ReadyMaxS float64       `json:"ready_max_s"`
	BackTo1S  float64       `json:"back_to_1_s"`
	PeakCount int           `json:"peak_count"`
	Calls     reports.Calls `json:"calls"`
	ReplicaS  float64       `json:"replica_s"`
	Passed    bool          `json:"passed"`
}

// Stats are the run's costs.
type Stats struct {
	Events   uint64        `json:"events"`
	Passes   int           `json:"passes"`
	VirtualS float64       `json:"virtual_s"`
	Wall     time.Duration `json:"wall"`
}

// Report is a simulated run.
type Report struct {
	Meta     reports.RunMeta
	Records  []Record // the results file's records, run first, end last
	Verdicts []reports.Verdict
	Row      reports.Row
	Outcomes []Outcome
	Stats    Stats
	// Skipped names the harness's scenarios the sim has no counterpart for
	// (run them on a platform).
	Skipped []string
}

// Outcome returns the named scenario's outcome (ok false when it did not run).
func (r *Report) Outcome(name string) (Outcome, bool) {
	for _, o := range r.Outcomes {
		if o.Scenario == name {
			return o, true
		}
	}
	return Outcome{}, false
}

// Sim is one simulated run in progress.
type Sim struct {
	cfg     Config
	l       loop
	pf      *platform
	c       *controller.Controller
	st      *store.Store
	ctx     context.Context
	records []Record
	nzones  int
	passes  int
	main    *coro // the scenarios' script
	shared  *zone // the run's one zone (Config.OneZone), once created
	// runStart is the run's start: 0, or with Config.OneZone the moment the
	// zone made before the run serves (Outcome.StartS counts from it).
	runStart time.Duration
}

// oneZoneName is the zone of a Config.OneZone run.
const oneZoneName = "load-test-sim"

// setupZone makes the run's one zone before the run starts (Config.OneZone),
// as Ramen's load test found its zone: count 1 and the profile's max, a
// worker ready and routed. The run's times count from then.
func (s *Sim) setupZone() error {
	sp := &scope{sim: s, co: s.main, name: "setup", zname: oneZoneName, start: s.l.since()}
	s.shared = s.newZone(oneZoneName)
	one, maxCount := 1, s.cfg.Profile.Max
	if _, err := s.c.Apply(s.ctx, actorAdmin, s.cfg.Group, oneZoneName, controller.Change{Count: &one, MaxCount: &maxCount}); err != nil {
		return fmt.Errorf("sim: create zone %s: %w", oneZoneName, err)
	}
	limit := s.l.since() + 30*time.Minute
	for !s.shared.served(1 + s.cfg.Model.Canary) {
		if s.l.since() > limit {
			return fmt.Errorf("sim: zone %s not served after 30 min", oneZoneName)
		}
		sp.pause(250 * time.Millisecond)
	}
	s.runStart = s.l.since()
	return nil
}

func (s *Sim) write(kind string, v any) { s.records = append(s.records, Record{kind, v}) }

// Validate reports a config no run can use.
func (c Config) Validate() error {
	var errs []error
	if err := c.Profile.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Policy != scenarios.PolicyStep && c.Policy != scenarios.PolicyHPA {
		errs = append(errs, fmt.Errorf("sim: policy %q: want step or hpa", c.Policy))
	}
	if err := c.Step.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Model.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Profile.SchedulerInterval < controller.MinInterval || c.Profile.SchedulerInterval > controller.MaxInterval {
		errs = append(errs, fmt.Errorf("sim: scheduler interval %s outside [%s, %s]", c.Profile.SchedulerInterval,
			controller.MinInterval, controller.MaxInterval))
	}
	if c.SchedulerPhase < 0 {
		errs = append(errs, fmt.Errorf("sim: scheduler phase %s < 0", c.SchedulerPhase))
	}
	if _, err := c.list(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// list resolves the scenario names. With none given it is the harness's
// default list (the five, and spike with hpa) less the scenarios that have
// no simulated counterpart, which skipped names; a name given that has none
// is an error.
func (c Config) list() ([]scenarios.Scenario, error) {
	l, _, err := c.resolve()
	return l, err
}

func (c Config) resolve() (list []scenarios.Scenario, skipped []string, err error) {
	l, err := scenarios.Select(c.Scenarios)
	if err != nil {
		return nil, nil, fmt.Errorf("sim: %w", err)
	}
	if len(c.Scenarios) == 0 && c.Policy == scenarios.PolicyHPA {
		l = append(l, scenarios.Spike())
	}
	for _, sc := range l {
		switch {
		case simulates(sc):
			list = append(list, sc)
		case len(c.Scenarios) == 0:
			skipped = append(skipped, sc.Name)
		default:
			return nil, nil, fmt.Errorf("sim: scenario %q has no simulated counterpart (have: %s)", sc.Name, strings.Join(simulated(), ", "))
		}
	}
	return list, skipped, nil
}

// Settings are the run's settings for the results file: the profile's,
// the step policy's, the model's and the seed.
func (c Config) Settings() map[string]string {
	s := c.Profile.Settings()
	for k, v := range c.Model.Settings() {
		s[k] = v
	}
	s["policy"] = c.Policy
	s["seed"] = strconv.FormatUint(c.Seed, 10)
	s["up_cooldown"], s["down_cooldown"] = c.Step.UpCooldown.String(), c.Step.DownCooldown.String()
	s["startup_grace"], s["target_rps"] = c.Step.StartupGrace.String(), strconv.FormatFloat(c.Step.TargetRPS, 'g', -1, 64)
	if c.SchedulerPhase > 0 {
		s["scheduler_phase"] = c.SchedulerPhase.String()
	}
	if c.Step.MaxUpStep > 0 {
		s["max_up_step"] = strconv.Itoa(c.Step.MaxUpStep)
	}
	if c.OneZone {
		s["one_zone"] = "true"
	}
	return s
}

// Run simulates cfg's scenarios in turn, as `scaleproof run` runs them, and
// returns the results. The scheduler passes every SchedulerInterval from the
// run's start. It uses a temporary state store (removed at the end) and
// stops early, with an error, when ctx ends.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	list, skipped, _ := cfg.resolve()
	return run(ctx, cfg, list, skipped)
}

// run simulates the scenarios of list (simulates(sc) for each) under cfg;
// skipped are the names Run left out, for the report.
func run(ctx context.Context, cfg Config, list []scenarios.Scenario, skipped []string) (*Report, error) {
	wall := time.Now()
	dir, err := os.MkdirTemp("", "scaleproof-sim-")
	if err != nil {
		return nil, fmt.Errorf("sim: state dir: %w", err)
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(filepath.Join(dir, "state.db"), store.Options{NoSync: true})
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	defer st.Close()
	s := &Sim{cfg: cfg, st: st, ctx: ctx, pf: &platform{zones: map[string]*zone{}, byName: map[string]*zone{}}}
	s.c, err = controller.New(controller.Options{
		Store: st, Target: s.pf, Discovery: s.pf, Scraper: s.pf,
		Policy: controller.StepPolicy(cfg.Step), StartupGrace: cfg.Step.StartupGrace,
		Clock: &s.l, Logger: slog.New(slog.DiscardHandler), Metrics: metrics{s}, Concurrency: cfg.Concurrency,
		Faults: cfg.Faults,
	})
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	rep := &Report{Meta: reports.RunMeta{Schema: reports.Schema, RunID: fmt.Sprintf("sim-seed%d", cfg.Seed), Platform: cfg.Platform,
		Profile: cfg.Profile.Name, Policy: cfg.Policy, Settings: cfg.Settings(), Started: Epoch}}
	s.write(reports.KindRun, rep.Meta)

	// The scheduler: a pass every interval from the first, each read at its
	// tick plus the model's pass jitter (its own random stream).
	first := cfg.Profile.SchedulerInterval
	if cfg.SchedulerPhase > 0 {
		first = cfg.SchedulerPhase
	}
	jitter := rand.New(rand.NewPCG(cfg.Seed, 0))
	var tick func(at time.Duration)
	tick = func(at time.Duration) {
		s.c.Pass(ctx)
		s.passes++
		next := at + cfg.Profile.SchedulerInterval
		j := time.Duration(0)
		if cfg.Model.PassJitter > 0 {
			j = time.Duration(jitter.Int64N(int64(min(cfg.Model.PassJitter, cfg.Profile.SchedulerInterval))))
		}
		s.l.at(next+j, func() { tick(next) })
	}
	s.l.at(first, func() { tick(first) })

	var main *coro
	main = s.spawn(func() {
		if cfg.OneZone {
			if err := s.setupZone(); err != nil {
				main.err = err
				return
			}
		}
		for _, sc := range list {
			if ctx.Err() != nil {
				return
			}
			v, o := s.runOne(sc)
			rep.Verdicts = append(rep.Verdicts, v)
			rep.Outcomes = append(rep.Outcomes, o)
		}
	})
	s.main = main
	s.l.after(0, main.step)
	// Bounded: every scenario has timeouts; the limit is a backstop.
	limit := time.Duration(len(list)+1) * (cfg.Profile.UpTimeout + cfg.Profile.DownTimeout + 30*time.Minute)
	finished := s.l.run(limit, func() bool { return main.done || ctx.Err() != nil })
	code, reason := 0, ""
	switch {
	case main.err != nil:
		return nil, main.err
	case ctx.Err() != nil:
		main.abandon()
		code, reason = 130, "interrupted"
	case !finished || !main.done:
		main.abandon()
		return nil, fmt.Errorf("sim: virtual time passed %s with scenarios still running", limit)
	}
	rep.Row = reports.SummaryRow(cfg.Platform, rep.Verdicts)
	if code == 0 && (!rep.Row.Passed || len(rep.Verdicts) < len(list)) {
		code, reason = 1, "a scenario failed"
	}
	s.write(reports.KindSummary, rep.Row)
	if code != 130 {
		s.write(reports.KindEnd, reports.End{Ended: s.l.Now(), ExitCode: code, Reason: reason})
	}
	rep.Records, rep.Skipped = s.records, skipped
	rep.Stats = Stats{Events: s.l.events, Passes: s.passes, VirtualS: s.l.since().Seconds(), Wall: time.Since(wall)}
	if ctx.Err() != nil {
		return rep, fmt.Errorf("sim: stopped at %s of virtual time: %w", s.l.since(), context.Cause(ctx))
	}
	return rep, nil
}

// newZone makes a zone's model with its own random stream.
func (s *Sim) newZone(name string) *zone {
	s.nzones++
	return s.addZone(name, uint64(s.nzones))
}

// siblingStreams numbers the random streams of the groups' other zones
// (World.WatchGroup) apart from the scenario zones' (1, 2, ...), so that a
// sibling moves no scenario zone's draws.
const siblingStreams = 1 << 32

// addZone adds a model zone whose draws come from random stream stream.
func (s *Sim) addZone(name string, stream uint64) *zone {
	z := &zone{group: s.cfg.Group, name: name, m: s.cfg.Model, l: &s.l, byID: map[string]*worker{},
		rng: rand.New(rand.NewPCG(s.cfg.Seed, stream))}
	s.pf.add(z)
	return z
}

// WriteResults writes the report as a results file (schema
// scaleproof.results/v1), readable by reports.Read.
func (r *Report) WriteResults(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, rec := range r.Records {
		data, err := json.Marshal(rec.Data)
		if err != nil {
			return fmt.Errorf("sim: encode %s: %w", rec.Kind, err)
		}
		if err := enc.Encode(struct {
			Kind string          `json:"kind"`
			Data json.RawMessage `json:"data"`
		}{rec.Kind, data}); err != nil {
			return fmt.Errorf("sim: write results: %w", err)
		}
	}
	return nil
}

// WriteResultsFile writes the results file at path.
func (r *Report) WriteResultsFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	if err := r.WriteResults(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// coro is a scenario script run as a coroutine of the event loop: exactly
// one of the two runs at a time, so the script reads and changes the
// simulation as if it were an event.
type coro struct {
	resume, yield chan struct{}
	done          bool
	err           error
	dead          chan struct{}
}

func (s *Sim) spawn(fn func()) *coro {
	co := &coro{resume: make(chan struct{}), yield: make(chan struct{}), dead: make(chan struct{})}
	go func() {
		defer func() {
			if p := recover(); p != nil && p != errAbandoned {
				co.err = fmt.Errorf("sim: scenario script panicked: %v", p)
			}
			co.done = true
			close(co.dead)
		}()
		if _, ok := <-co.resume; !ok {
			return
		}
		fn()
	}()
	return co
}

var errAbandoned = errors.New("abandoned")

// step runs the script until it blocks or ends (loop side).
func (co *coro) step() {
	if co.done {
		return
	}
	co.resume <- struct{}{}
	select {
	case <-co.yield:
	case <-co.dead:
	}
}

// block hands control back to the loop until step is called (script side).
func (co *coro) block() {
	co.yield <- struct{}{}
	if _, ok := <-co.resume; !ok {
		panic(errAbandoned)
	}
}

// abandon ends a blocked script's goroutine.
func (co *coro) abandon() {
	if !co.done {
		close(co.resume)
		<-co.dead
	}
}
