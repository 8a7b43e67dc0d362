package scenarios

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/observe"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// Status is the live state of a run, for progress displays.
type Status struct {
	Scenario string
	Phase    string
	Elapsed  time.Duration // since the scenario started
	Expected time.Duration // the scenario's expected length (for "elapsed of expected")
	VUs      int
	Count    int
	Max      int
	Ready    int
	Calls    reports.Calls
	Decision string
	// Shards is how many pods each load runs on (Env.Shards; 0 or 1: in
	// this process). Sharded loads report their calls when they end, so
	// Calls stays zero while they run.
	Shards int
}

// Env is what every scenario gets: the system's endpoints, the profile, and
// the run's sinks.
type Env struct {
	Endpoints platform.Endpoints
	Profile   Profile
	Console   *consoleclient.Client
	Results   *reports.Writer // nil: no results file
	Log       *slog.Logger
	Progress  func(Status) // nil: no progress
	// HTTP is the load's client (no redirects are followed).
	HTTP *http.Client
	// RunTag makes zone names unique per run ("sustained-3fa2"), so a console
	// that keeps state across runs starts every scenario on a fresh zone.
	RunTag string
	// Policy is the policy every scenario's zone is created with: "step"
	// (the console's default; "" is step) or "hpa" (policy.go).
	Policy string
	// Faults are the platform's fault actions (platform.FaulterOf); nil:
	// none offered, and the scenarios that need one are skipped.
	Faults platform.Faulter
	// Shards, when > 1, runs every load of the scenarios on the platform's
	// Sharder as that many load generators at once (loadshards.go);
	// ShardLead is how long before their common start they are created
	// (0: DefaultShardLead).
	Shards    int
	Sharder   platform.LoadSharder
	ShardLead time.Duration

	// Clock is the scenarios' time for their phase holds (nil: SystemClock).
	Clock Clock

	// Target, when set, is the autoscaler a target run judges (the
	// cluster's HPA, KEDA, the console through target.NewConsole): the
	// target scenarios read and change it through this interface and judge
	// each fact on its contracts (targets.go). LoadURL is where their calls
	// go ({LoadURL}/mcp); StartLoad starts a load (nil: the load engine in
	// this process against it, EngineLoad). Faults address the target's
	// workers as group = Namespace, zone = Deployment.
	Target                target.Target
	LoadURL               string
	StartLoad             LoadStarter
	Namespace, Deployment string

	readyz   *observe.Readyz
	contract ContractSettings // read once per run (contractrun.go)
}

func (e *Env) clock() Clock { return clockOrSystem(e.Clock) }

// Scenario is one named scenario.
type Scenario struct {
	Name  string
	Title string // one line: what the scenario does
	// TitleFor, when set, is the title under p (e.g. the burst's length in
	// that profile); Title is then the published profile's.
	TitleFor func(p Profile) string
	// Facts are the target facts it judges, in report order (a target
	// scenario's; the console's name theirs as they judge them).
	Facts []target.Fact
	// Expected is the scenario's rough length under p and the target's
	// contracts c (nil on the console) for progress ("~N s"), not counting
	// a target's wait for the count to settle at min first.
	Expected func(p Profile, c target.Contracts) time.Duration
	// Run is the scenario on the console (a platform run) when it has no
	// Flow.
	Run func(ctx context.Context, e *Env, s *Scope) error
	// Flow, when set, is the scenario's steps on any World: a platform run
	// runs it on the console's Scope and then OnPlatform, and the simulator
	// runs it on its model, so both judge the scenario by the same code.
	Flow func(ctx context.Context, w World) error
	// OnPlatform, when set, judges after a successful Flow what only a
	// platform offers (the workers' own /metrics); the simulator has none.
	OnPlatform func(ctx context.Context, e *Env, s *Scope) error
	// Needs, when set, is what a platform run of the Flow needs of the
	// run (a Prometheus): an error fails the scenario before its zone is
	// made. The simulator's model offers it all.
	Needs func(e *Env) error
}

// run runs sc on the console's scope s: its Flow then OnPlatform, or its Run.
func (sc Scenario) run(ctx context.Context, e *Env, s *Scope) error {
	if sc.Flow == nil {
		return sc.Run(ctx, e, s)
	}
	if sc.Needs != nil {
		if err := sc.Needs(e); err != nil {
			return err
		}
	}
	if err := sc.Flow(ctx, s); err != nil || sc.OnPlatform == nil {
		return err
	}
	return sc.OnPlatform(ctx, e, s)
}

// All returns the five load-test scenarios in the published order.
func All() []Scenario {
	return []Scenario{ViewerRefused(), MaxOneNeverScales(), Sustained(), Burst(), MaxLowered()}
}

// Select returns the scenarios named (all five when names is empty); the
// spike scenario (Grafana's post on autoscaling Loki queries with KEDA) (spike.go) is selected by name only.
func Select(names []string) ([]Scenario, error) {
	if len(names) == 0 {
		return All(), nil
	}
	all := append(All(), Spike(), NearThreshold(), ScaleUpLimit())
	all = append(all, Contract()...)
	return selectNamed(all, func(s Scenario) string { return s.Name }, names, ContractSet, Contract(),
		fmt.Sprintf(", or %s for all of %s", ContractSet, strings.Join(contractNames(), ", ")))
}

// selectNamed returns the scenarios of all named by names, in the names'
// order; the name set stands for all of setList. An unknown name is an
// error listing the known ones, then hint.
func selectNamed[S any](all []S, name func(S) string, names []string, set string, setList []S, hint string) ([]S, error) {
	var out []S
	for _, n := range names {
		if set != "" && n == set {
			out = append(out, setList...)
			continue
		}
		found := false
		for _, s := range all {
			if name(s) == n {
				out, found = append(out, s), true
			}
		}
		if !found {
			have := make([]string, 0, len(all))
			for _, s := range all {
				have = append(have, name(s))
			}
			return nil, fmt.Errorf("unknown scenario %q (have: %s%s)", n, strings.Join(have, ", "), hint)
		}
	}
	return out, nil
}

func contractNames() []string {
	var out []string
	for _, s := range Contract() {
		out = append(out, s.Name)
	}
	return out
}

// NewEnv builds an Env for endpoints and a profile.
func NewEnv(ep platform.Endpoints, p Profile, w *reports.Writer, log *slog.Logger) *Env {
	if log == nil {
		log = slog.Default()
	}
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	return &Env{
		Endpoints: ep,
		Profile:   p,
		Console:   consoleclient.New(ep.ConsoleURL, 10*time.Second),
		Results:   w,
		Log:       log,
		HTTP:      loadClient(),
		RunTag:    hex.EncodeToString(b),
	}
}

// loadClient is the loads' HTTP client: up to 256 idle connections a host,
// calls bounded at 2 minutes, redirects not followed.
func loadClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second}, Timeout: 2 * time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (e *Env) write(kind string, v any) { writeRecord(e.Results, e.Log, kind, v) }

// writeRecord writes one record to the results file w (nil: none); a
// failed write is logged, never fatal to the run.
func writeRecord(w *reports.Writer, log *slog.Logger, kind string, v any) {
	if w == nil {
		return
	}
	if err := w.Write(kind, v); err != nil {
		log.Warn("results file", "err", err)
	}
}

// endVerdict is the last word on a scenario's verdict v: stopped from
// outside (ctx ended), it is no verdict, whatever the facts so far say. It
// writes v and logs the end.
func endVerdict(ctx context.Context, w *reports.Writer, log *slog.Logger, v reports.Verdict) reports.Verdict {
	if ctx.Err() != nil {
		v.Passed, v.Interrupted, v.Error = false, true, "interrupted: the run was stopped while this scenario ran"
	}
	writeRecord(w, log, reports.KindVerdict, v)
	log.Info("scenario end", "scenario", v.Scenario, "passed", v.Passed, "err", v.Error, "skipped", v.Skipped)
	return v
}

// Run enables the console's auto-rebalance scheduler at the profile's
// interval, watches /readyz for the whole run, and runs each scenario in
// turn. It returns every verdict, also the ones of scenarios that failed to
// finish; ctx ending stops the run (verdicts so far are returned).
func (e *Env) Run(ctx context.Context, list []Scenario) []reports.Verdict {
	if e.Target != nil {
		return e.runTargets(ctx, list)
	}
	e.readyz = &observe.Readyz{Client: consoleclient.New(e.Endpoints.ConsoleURL, e.Profile.ReadyzTimeout),
		Interval: e.Profile.ReadyzInterval,
		OnFail: func(f observe.ReadyzFailure) {
			e.Log.Warn("console /readyz failed", "status", f.Status, "err", f.Err)
			e.write(reports.KindReadyz, f)
		}}
	stopReadyz := goUntilStopped(ctx, e.readyz.Run)
	defer stopReadyz()

	var out []reports.Verdict
	if err := e.enableAutorebalance(ctx); err != nil {
		for _, sc := range list {
			v := reports.Verdict{Scenario: sc.Name, Error: err.Error()}
			e.write(reports.KindVerdict, v)
			out = append(out, v)
		}
		return out
	}
	e.contract = e.contractSettings(ctx)
	e.Log.Info("contract settings", "up_cooldown", e.contract.UpCooldown.String(), "down_cooldown", e.contract.DownCooldown.String(),
		"interval", e.contract.Interval.String(), "low_rounds", e.contract.LowRounds, "source", e.contract.Source)
	for _, sc := range list {
		if ctx.Err() != nil {
			break
		}
		out = append(out, e.RunOne(ctx, sc))
	}
	return out
}

// enableAutorebalance turns the console's auto-rebalance scheduler on at
// the profile's interval (PUT /api/v1/config/autorebalance as the super
// admin); the error names the answer.
func (e *Env) enableAutorebalance(ctx context.Context) error {
	st, err := e.Console.SetAutorebalance(ctx, e.Endpoints.Keys.SuperAdmin.Key,
		consoleclient.Autorebalance{Enabled: true, IntervalSeconds: e.Profile.SchedulerInterval.Seconds()})
	if err != nil || st != http.StatusOK {
		return fmt.Errorf("turning on auto-rebalance every %s: HTTP %d %v", e.Profile.SchedulerInterval, st, err)
	}
	return nil
}

// createZone creates zone of the env's group with count 1 and max maxCount,
// as the group admin.
func (e *Env) createZone(ctx context.Context, zone string, maxCount int) error {
	one := 1
	st, err := e.Console.PutZone(ctx, e.Endpoints.Keys.GroupAdmin.Key, e.Endpoints.Group, zone, consoleclient.Update{Count: &one, MaxCount: &maxCount})
	if err != nil || st != http.StatusOK {
		return fmt.Errorf("create zone %s/%s with count 1, max %d: HTTP %d %v", e.Endpoints.Group, zone, maxCount, st, err)
	}
	return nil
}

// RunOne runs one scenario and returns (and writes) its verdict.
func (e *Env) RunOne(ctx context.Context, sc Scenario) reports.Verdict {
	s := newScope(e, sc)
	e.write(reports.KindScenario, reports.ScenarioStart{Scenario: sc.Name, Title: sc.TitleUnder(e.Profile), Zone: s.Zone, Started: s.Start})
	e.Log.Info("scenario start", "scenario", sc.Name, "zone", s.Zone)
	return endVerdict(ctx, e.Results, e.Log, s.finish(sc.run(ctx, e, s)))
}

// Decide is the one verdict rule, for every engine and world (the console on
// a platform, a target, the simulator): v carries the scenario's facts, and
// runErr is what its Run returned.
//   - A skip (the scenario does not apply to the run: the platform does not
//     offer a fault action it needs, or it judges the other policy's rules)
//     is Skipped with the reason; nothing is judged.
//   - Any other error is the verdict's Error, and it does not pass.
//   - A scenario whose facts are all not applicable is Skipped with their
//     reasons: nothing was judged, so it neither passes nor fails.
//   - Otherwise it passes when at least one fact was judged and passed and
//     none failed (reports.FactsPass); a not-applicable fact counts neither way.
func Decide(v reports.Verdict, runErr error) reports.Verdict {
	v.Passed = false
	var sk *skipError
	switch {
	case errors.As(runErr, &sk):
		v.Skipped = sk.reason
		return v
	case runErr != nil:
		v.Error = runErr.Error()
		return v
	}
	if _, _, na := reports.CountFacts(v.Facts); na > 0 && na == len(v.Facts) {
		why := make([]string, 0, na)
		for _, f := range v.Facts {
			why = append(why, f.Name+": "+f.NotApplicable)
		}
		v.Skipped = "none of this scenario's facts applies (" + strings.Join(why, "; ") + ")"
		return v
	}
	v.Passed = reports.FactsPass(v.Facts)
	return v
}

// errStopped is returned by waits when the run is stopped.
var errStopped = errors.New("run stopped")

// TitleUnder is the scenario's title under p: TitleFor(p) where it is set,
// else Title. A platform run and the simulator both title a scenario with it.
func (sc Scenario) TitleUnder(p Profile) string {
	if sc.TitleFor != nil {
		return sc.TitleFor(p)
	}
	return sc.Title
}
