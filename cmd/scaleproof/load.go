package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/run"
)

// exitThreshold is k6's exit code when a threshold is crossed.
const exitThreshold = 99

// duration is a time.Duration that reads "250ms" from YAML and JSON.
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n float64
		if json.Unmarshal(b, &n) != nil {
			return fmt.Errorf("want a duration like \"30s\", got %s", b)
		}
		*d = duration(time.Duration(n * float64(time.Millisecond))) // a bare number is ms, as in k6
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration like \"30s\": %v", err)
	}
	*d = duration(v)
	return nil
}

// stageSpec is one stage of a config file: {duration: 2m, target: 50}.
type stageSpec struct {
	Duration duration `json:"duration"`
	Target   float64  `json:"target"`
}

// thresholdSpec is "p95<250ms" or {threshold: ..., abortOnFail: true, delayAbortEval: 10s}.
type thresholdSpec struct{ load.Threshold }

func (t *thresholdSpec) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		th, err := load.ParseThreshold(s)
		t.Threshold = th
		return err
	}
	var o struct {
		Threshold      string   `json:"threshold"`
		AbortOnFail    bool     `json:"abortOnFail"`
		DelayAbortEval duration `json:"delayAbortEval"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return fmt.Errorf("a threshold is \"p95<250ms\" or {threshold: ..., abortOnFail: true}: %v", err)
	}
	t.Threshold = load.Threshold{Expr: o.Threshold, AbortOnFail: o.AbortOnFail, DelayAbortEval: time.Duration(o.DelayAbortEval)}
	return t.Compile()
}

// loadConfig is `scaleproof load`'s settings; --config reads the same keys
// from YAML (or JSON), and flags given on the command line win.
type loadConfig struct {
	URL     string            `json:"url"`
	Tool    string            `json:"tool"`
	Args    json.RawMessage   `json:"args"`
	Headers map[string]string `json:"headers"`
	Bearer  string            `json:"bearer"`
	Method  string            `json:"method"`
	Body    string            `json:"body"`

	Executor         string          `json:"executor"`
	VUs              int             `json:"vus"`
	Duration         duration        `json:"duration"`
	StartVUs         *int            `json:"startVUs"`
	Stages           []stageSpec     `json:"stages"`
	Rate             float64         `json:"rate"`
	StartRate        float64         `json:"startRate"`
	TimeUnit         duration        `json:"timeUnit"`
	PreAllocatedVUs  int             `json:"preAllocatedVUs"`
	MaxVUs           int             `json:"maxVUs"`
	GracefulStop     *duration       `json:"gracefulStop"`
	GracefulRampDown *duration       `json:"gracefulRampDown"`
	ThinkTime        duration        `json:"thinkTime"`
	Timeout          duration        `json:"timeout"`
	MaxIterations    int64           `json:"maxIterations"`
	Thresholds       []thresholdSpec `json:"thresholds"`

	Artifacts string `json:"artifacts"`
	// Client is "fast" (default: one raw HTTP/1.1 connection per VU, for
	// http:// targets) or "net/http" (Go's client; always for https).
	Client string `json:"client"`
}

// loadFlags are load's flags: f holds those that are loadConfig's settings
// as they are, the others are converted by config.
type loadFlags struct {
	f                              loadConfig
	cfgFile, argsJSON, stages      string
	headers, thresholds            []string
	gracefulStop, gracefulRampDown time.Duration
	startVUs                       int
	asJSON, quiet                  bool
	so                             shardOpts
}

// plan is the loadPlan of --config's settings with the flags given over
// them; its errors are usage errors (exit 2).
func (lf *loadFlags) plan(fl *pflag.FlagSet) (*loadPlan, error) {
	cfg, err := lf.config(fl)
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	plan, err := planLoad(cfg, fl)
	if err == nil {
		err = lf.so.apply(plan)
	}
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	return plan, nil
}

// config reads --config, then sets what the flags given on the command
// line say over it.
func (lf *loadFlags) config(fl *pflag.FlagSet) (loadConfig, error) {
	cfg, f := loadConfig{}, &lf.f
	if lf.cfgFile != "" {
		b, err := os.ReadFile(lf.cfgFile)
		if err != nil {
			return cfg, err
		}
		if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
			return cfg, fmt.Errorf("--config %s: %w", lf.cfgFile, err)
		}
	}
	set := func(name string, apply func()) {
		if fl.Changed(name) {
			apply()
		}
	}
	set("url", func() { cfg.URL = f.URL })
	set("tool", func() { cfg.Tool = f.Tool })
	set("args", func() { cfg.Args = json.RawMessage(lf.argsJSON) })
	set("bearer", func() { cfg.Bearer = f.Bearer })
	set("method", func() { cfg.Method = f.Method })
	set("body", func() { cfg.Body = f.Body })
	set("executor", func() { cfg.Executor = f.Executor })
	set("vus", func() { cfg.VUs = f.VUs })
	set("duration", func() { cfg.Duration = f.Duration })
	set("start-vus", func() { cfg.StartVUs = &lf.startVUs })
	set("rate", func() { cfg.Rate = f.Rate })
	set("start-rate", func() { cfg.StartRate = f.StartRate })
	set("time-unit", func() { cfg.TimeUnit = f.TimeUnit })
	set("pre-allocated-vus", func() { cfg.PreAllocatedVUs = f.PreAllocatedVUs })
	set("max-vus", func() { cfg.MaxVUs = f.MaxVUs })
	set("graceful-stop", func() { d := duration(lf.gracefulStop); cfg.GracefulStop = &d })
	set("graceful-ramp-down", func() { d := duration(lf.gracefulRampDown); cfg.GracefulRampDown = &d })
	set("think-time", func() { cfg.ThinkTime = f.ThinkTime })
	set("timeout", func() { cfg.Timeout = f.Timeout })
	set("max-iterations", func() { cfg.MaxIterations = f.MaxIterations })
	set("artifacts", func() { cfg.Artifacts = f.Artifacts })
	set("client", func() { cfg.Client = f.Client })
	if cfg.Client != "" && cfg.Client != "fast" && cfg.Client != "net/http" {
		return cfg, fmt.Errorf("--client %q: have fast, net/http", cfg.Client)
	}
	if fl.Changed("stages") {
		st, err := parseStages(lf.stages)
		if err != nil {
			return cfg, err
		}
		cfg.Stages = st
	}
	for _, h := range lf.headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return cfg, fmt.Errorf("--header %q: want 'Name: value'", h)
		}
		if cfg.Headers == nil {
			cfg.Headers = map[string]string{}
		}
		cfg.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	for _, s := range lf.thresholds {
		th, err := load.ParseThreshold(s)
		if err != nil {
			return cfg, err
		}
		cfg.Thresholds = append(cfg.Thresholds, thresholdSpec{th})
	}
	return cfg, nil
}

func newLoadCmd() *cobra.Command {
	lf := &loadFlags{}
	f := &lf.f
	c := &cobra.Command{
		Use:   "load",
		Short: "Drive load at an MCP tool or an HTTP endpoint, k6-style executors and thresholds",
		Long: `load sends MCP tools/call requests (--tool) or plain HTTP requests to --url with one of
k6's four executors, prints an end-of-test summary and writes a results file that
'scaleproof report' and 'scaleproof compare' read.

Executors (--executor; chosen from the flags when omitted):
  constant-vus           --vus VUs loop for --duration (the default)
  ramping-vus            --stages 2m:50,1m:50,30s:0 from --start-vus (default 1);
                         a VU removed by a ramp-down finishes its call within --graceful-ramp-down
  constant-arrival-rate  --rate N per --time-unit (default 1s) for --duration (chosen when --rate is set)
  ramping-arrival-rate   --stages 30s:100,1m:100 (rates) from --start-rate
  Arrival-rate executors start iterations on a schedule whatever the target does:
  --pre-allocated-vus are made up front, more up to --max-vus when all are busy, and
  an iteration that finds all --max-vus busy is dropped (counted and shown).
  At the end no iteration starts; calls in flight get --graceful-stop to finish.

Latency: open-model executors measure from each iteration's scheduled start, so a
stalled target shows in the percentiles. Closed-loop VUs wait for each answer, so a
stall delays their next call instead: their results are labelled closed-loop.

Thresholds (--threshold, repeatable; k6's idea): METRIC OP VALUE on the whole run,
  p50 p90 p95 p99 p99.9 min avg med max (latency: 250ms, 1.5s; a bare number is ms),
  rate_<class> rate_errors (0..1), count_<class> count_errors, iterations, dropped_iterations;
  classes: ok 429 4xx 5xx jsonrpc_error bad_response transport interrupted.
  Append ,abortOnFail to stop the run as soon as it fails (,delayAbortEval=10s to wait first).

Distributed load (--load-shards N, on Kubernetes: --kubeconfig, --namespace, --image):
  the load runs as an Indexed Job of N pods, each with its share of the VUs or rate (64 VUs
  over 3: 22/21/21) from a common start; their counts and HDR histograms are merged, and the
  summary and thresholds are those of the merged result. --url must be reachable from the
  pods. A shard that dies is named with why, and the run fails (exit 1).

Exit codes: 0 done and every threshold passed, 99 a threshold was crossed, 1 a load shard
died, 2 bad usage, 130 interrupted (Ctrl-C: calls in flight get --graceful-stop; again: stop
them now).
The results file is written either way.`,
		Example: `  scaleproof load --url http://127.0.0.1:8080/mcp --tool work --args '{"ms":200}' --vus 64 --duration 60s
  scaleproof load --url http://127.0.0.1:8080/mcp --tool work --executor constant-arrival-rate \
      --rate 500 --time-unit 1s --duration 1m --pre-allocated-vus 50 --max-vus 500
  scaleproof load --url http://127.0.0.1:8080/mcp --tool work --stages 2m:50,1m:50,30s:100,30s:50 \
      --threshold 'p95<250ms' --threshold 'rate_429<0.05,abortOnFail'
  scaleproof load --url http://127.0.0.1:8080/healthz --method GET --vus 8 --duration 10s
  scaleproof load --config load.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			plan, err := lf.plan(cmd.Flags())
			if err != nil {
				return err
			}
			return runLoad(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), plan, lf.asJSON, lf.quiet)
		},
	}
	fs := c.Flags()
	fs.StringVar(&lf.cfgFile, "config", "", "read these settings from a YAML file (keys: url, tool, args, headers, bearer, method, body, executor, vus, duration, startVUs, stages [{duration, target}], rate, startRate, timeUnit, preAllocatedVUs, maxVUs, gracefulStop, gracefulRampDown, thinkTime, timeout, maxIterations, thresholds, artifacts); flags win")
	fs.StringVar(&f.URL, "url", "", "the target: an MCP endpoint (with --tool) or any HTTP URL")
	fs.StringVar(&f.Tool, "tool", "", "call this MCP tool with JSON-RPC tools/call; without it, plain HTTP")
	fs.StringVar(&lf.argsJSON, "args", "{}", "the tool's arguments, a JSON object")
	fs.StringArrayVar(&lf.headers, "header", nil, "add a request header 'Name: value' (repeatable)")
	fs.StringVar(&f.Bearer, "bearer", "", "send Authorization: Bearer KEY (use $SCALEPROOF_BEARER to keep it out of ps)")
	fs.StringVar(&f.Method, "method", "", "plain HTTP method (default GET, or POST with --body)")
	fs.StringVar(&f.Body, "body", "", "plain HTTP request body; @FILE reads a file")
	fs.StringVar(&f.Executor, "executor", "", "constant-vus, ramping-vus, constant-arrival-rate or ramping-arrival-rate")
	fs.IntVar(&f.VUs, "vus", 1, "constant-vus: the number of VUs")
	fs.DurationVar((*time.Duration)(&f.Duration), "duration", 30*time.Second, "constant-vus and constant-arrival-rate: how long iterations start")
	fs.IntVar(&lf.startVUs, "start-vus", 1, "ramping-vus: VUs at the start (k6's default 1)")
	fs.StringVar(&lf.stages, "stages", "", "ramping executors: DURATION:TARGET,... (VUs for ramping-vus, rates for ramping-arrival-rate)")
	fs.Float64Var(&f.Rate, "rate", 0, "constant-arrival-rate: iterations started per --time-unit")
	fs.Float64Var(&f.StartRate, "start-rate", 0, "ramping-arrival-rate: the rate at the start")
	fs.DurationVar((*time.Duration)(&f.TimeUnit), "time-unit", time.Second, "arrival-rate executors: the period --rate and stage targets count in")
	fs.IntVar(&f.PreAllocatedVUs, "pre-allocated-vus", 0, "arrival-rate executors: VUs made before the start (default: 1 per iteration per second of the peak rate, at least 1, at most --max-vus)")
	fs.IntVar(&f.MaxVUs, "max-vus", 0, "arrival-rate executors: most VUs; beyond, iterations are dropped (default: --pre-allocated-vus)")
	fs.DurationVar(&lf.gracefulStop, "graceful-stop", load.DefaultGracefulStop, "at the end, how long calls in flight may finish before they are interrupted")
	fs.DurationVar(&lf.gracefulRampDown, "graceful-ramp-down", load.DefaultGracefulRampDown, "ramping-vus: how long a removed VU's call may finish")
	fs.DurationVar((*time.Duration)(&f.ThinkTime), "think-time", 0, "closed-loop executors: pause of a VU between iterations (k6's sleep())")
	fs.DurationVar((*time.Duration)(&f.Timeout), "timeout", 60*time.Second, "per request (k6's default 60s); 0 for none")
	fs.Int64Var(&f.MaxIterations, "max-iterations", load.DefaultMaxIterations, "safety bound on the iterations of the run")
	fs.StringArrayVar(&lf.thresholds, "threshold", nil, "METRIC OP VALUE[,abortOnFail][,delayAbortEval=D], e.g. 'p95<250ms' (repeatable)")
	fs.StringVar(&f.Artifacts, "artifacts", "", "folder for results.jsonl (default $ARTIFACTS, else ./_artifacts/load-<time>)")
	fs.StringVar(&f.Client, "client", "fast", "http:// targets: fast (one raw HTTP/1.1 keep-alive connection per VU, same classification) or net/http (Go's client; always for https)")
	fs.BoolVar(&lf.asJSON, "json", false, "print the summary as JSON (the results file's load record) instead of text")
	fs.BoolVarP(&lf.quiet, "quiet", "q", false, "no progress line")
	addShardFlags(fs, &lf.so)
	return c
}

// parseStages reads "2m:50,1m:50,30s:0".
func parseStages(s string) ([]stageSpec, error) {
	var out []stageSpec
	for _, part := range strings.Split(s, ",") {
		d, t, ok := strings.Cut(strings.TrimSpace(part), ":")
		dd, derr := time.ParseDuration(d)
		tt, terr := strconv.ParseFloat(t, 64)
		if !ok || derr != nil || terr != nil || dd < 0 || tt < 0 {
			return nil, fmt.Errorf("--stages %q: stage %q is not DURATION:TARGET (e.g. 2m:50)", s, part)
		}
		out = append(out, stageSpec{duration(dd), tt})
	}
	return out, nil
}

// loadPlan is a checked loadConfig, ready to run.
type loadPlan struct {
	cfg        loadConfig
	executor   string
	closed     *load.Profile
	open       *load.ArrivalProfile
	exec       load.Exec
	wire       *load.Wire
	target     string
	thresholds []load.Threshold
	dir        string
	body       []byte // the plain HTTP body, @FILE read
	// shards > 1: the load runs as that many pods of sharder (loadshard.go)
	shards  int
	sharder platform.LoadSharder
}

func (p *loadPlan) model() string {
	if p.open != nil {
		return reports.ModelOpen
	}
	return reports.ModelClosed
}

func planLoad(cfg loadConfig, fl *pflag.FlagSet) (*loadPlan, error) {
	if cfg.URL == "" {
		return nil, errors.New("--url is required (or url: in --config)")
	}
	if !strings.HasPrefix(cfg.URL, "http://") && !strings.HasPrefix(cfg.URL, "https://") {
		return nil, fmt.Errorf("--url %q: want an http:// or https:// URL", cfg.URL)
	}
	for _, d := range []struct {
		flag string
		v    duration
		// notZero: 0 is "unset" (the default) in a config file; given as
		// a flag it would silently run the default instead.
		notZero bool
	}{{"duration", cfg.Duration, true}, {"time-unit", cfg.TimeUnit, true}, {"think-time", cfg.ThinkTime, false}, {"timeout", cfg.Timeout, false}} {
		if d.v < 0 {
			return nil, fmt.Errorf("--%s %v: want a duration >= 0, like 30s", d.flag, time.Duration(d.v))
		}
		if d.notZero && d.v == 0 && fl != nil && fl.Changed(d.flag) {
			return nil, fmt.Errorf("--%s 0s: want a duration > 0, like 30s", d.flag)
		}
	}
	if cfg.VUs < 0 || (cfg.VUs == 0 && fl != nil && fl.Changed("vus")) {
		return nil, fmt.Errorf("--vus %d: want 1 or more", cfg.VUs)
	}
	p := &loadPlan{cfg: cfg, wire: &load.Wire{}}
	ex := cfg.Executor
	if ex == "" {
		switch {
		case cfg.Rate > 0:
			ex = load.ExecutorConstantArrivalRate
		case len(cfg.Stages) > 0:
			ex = load.ExecutorRampingVUs
		default:
			ex = load.ExecutorConstantVUs
		}
	}
	p.executor = ex
	switch { // --rate is constant-arrival-rate's (the default executor's when given)
	case ex == load.ExecutorRampingArrivalRate && fl != nil && fl.Changed("rate"):
		return nil, fmt.Errorf("%s takes --start-rate and --stages, not --rate", ex)
	case (ex == load.ExecutorConstantArrivalRate || cfg.Executor == "") && (cfg.Rate < 0 || (cfg.Rate == 0 && fl != nil && fl.Changed("rate"))):
		return nil, fmt.Errorf("--rate %v: want iterations per --time-unit > 0", cfg.Rate)
	}
	conns := 1
	switch ex {
	case load.ExecutorConstantVUs, load.ExecutorRampingVUs:
		prof, err := closedProfile(cfg, ex)
		if err != nil {
			return nil, err
		}
		p.closed, conns = &prof, prof.PeakVUs()
	case load.ExecutorConstantArrivalRate, load.ExecutorRampingArrivalRate:
		prof, err := openProfile(cfg, ex)
		if err != nil {
			return nil, err
		}
		p.open, conns = &prof, prof.MaxVUs
	default:
		return nil, fmt.Errorf("--executor %q: have constant-vus, ramping-vus, constant-arrival-rate, ramping-arrival-rate", ex)
	}
	if fl != nil && p.open != nil && (fl.Changed("vus") || fl.Changed("think-time") || fl.Changed("graceful-ramp-down")) {
		return nil, fmt.Errorf("%s takes --rate/--stages, --pre-allocated-vus and --max-vus, not --vus, --think-time or --graceful-ramp-down", ex)
	}
	if fl != nil && p.closed != nil && (fl.Changed("rate") || fl.Changed("pre-allocated-vus") || fl.Changed("max-vus")) {
		return nil, fmt.Errorf("%s takes --vus or --stages, not --rate, --pre-allocated-vus or --max-vus (use --executor constant-arrival-rate)", ex)
	}

	body := []byte(cfg.Body)
	if rest, ok := strings.CutPrefix(cfg.Body, "@"); ok {
		b, err := os.ReadFile(rest)
		if err != nil {
			return nil, fmt.Errorf("--body: %w", err)
		}
		body = b
	}
	p.body = body
	exec, target, err := targetExec(cfg, body, conns, fl != nil && fl.Changed("timeout"), p.wire)
	if err != nil {
		return nil, err
	}
	p.exec, p.target = exec, target
	for _, t := range cfg.Thresholds {
		p.thresholds = append(p.thresholds, t.Threshold)
	}
	p.dir = run.ArtifactsDir(cfg.Artifacts, "load-"+time.Now().UTC().Format("20060102-150405"))
	return p, nil
}

// runFor is cfg's duration, 30 s when unset.
func (cfg loadConfig) runFor() time.Duration {
	if cfg.Duration > 0 {
		return time.Duration(cfg.Duration)
	}
	return 30 * time.Second
}

// maxIterations is cfg's bound on the iterations, the default when unset.
func (cfg loadConfig) maxIterations() int64 {
	if cfg.MaxIterations == 0 {
		return load.DefaultMaxIterations
	}
	return cfg.MaxIterations
}

// orDefault is *d, or def when d is nil.
func orDefault(d *duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return time.Duration(*d)
}

// closedProfile is cfg's profile for a closed-loop executor ex.
func closedProfile(cfg loadConfig, ex string) (load.Profile, error) {
	var prof load.Profile
	if ex == load.ExecutorConstantVUs {
		prof = load.ConstantVUs(max(cfg.VUs, 1), cfg.runFor())
	} else {
		start := 1
		if cfg.StartVUs != nil {
			start = *cfg.StartVUs
		}
		var st []load.Stage
		for _, s := range cfg.Stages {
			if s.Target != math.Trunc(s.Target) {
				return prof, fmt.Errorf("ramping-vus stage target %v: VUs are whole numbers", s.Target)
			}
			st = append(st, load.Stage{Duration: time.Duration(s.Duration), Target: int(s.Target)})
		}
		prof = load.RampingVUs(start, st...)
	}
	prof.GracefulStop = orDefault(cfg.GracefulStop, load.DefaultGracefulStop)
	prof.GracefulRampDown = orDefault(cfg.GracefulRampDown, load.DefaultGracefulRampDown)
	prof.ThinkTime = time.Duration(cfg.ThinkTime)
	prof.MaxIterations = cfg.maxIterations()
	return prof, prof.Validate()
}

// openProfile is cfg's profile for an arrival-rate executor ex, its VUs
// defaulted from the peak rate.
func openProfile(cfg loadConfig, ex string) (load.ArrivalProfile, error) {
	tu := time.Duration(cfg.TimeUnit)
	if tu == 0 {
		tu = load.DefaultTimeUnit
	}
	var prof load.ArrivalProfile
	peak := cfg.Rate
	if ex == load.ExecutorConstantArrivalRate {
		prof = load.ConstantArrivalRate(cfg.Rate, tu, cfg.runFor(), cfg.PreAllocatedVUs, cfg.MaxVUs)
	} else {
		var st []load.RateStage
		peak = cfg.StartRate
		for _, s := range cfg.Stages {
			st = append(st, load.RateStage{Duration: time.Duration(s.Duration), Target: s.Target})
			peak = max(peak, s.Target)
		}
		prof = load.RampingArrivalRate(cfg.StartRate, tu, cfg.PreAllocatedVUs, cfg.MaxVUs, st...)
	}
	if prof.PreAllocatedVUs == 0 {
		prof.PreAllocatedVUs = min(max(int(math.Ceil(peak/tu.Seconds())), 1), load.VULimit)
		if prof.MaxVUs > 0 { // the default never exceeds an explicit --max-vus
			prof.PreAllocatedVUs = min(prof.PreAllocatedVUs, prof.MaxVUs)
		}
	}
	if prof.MaxVUs == 0 {
		prof.MaxVUs = prof.PreAllocatedVUs
	}
	prof.GracefulStop = orDefault(cfg.GracefulStop, load.DefaultGracefulStop)
	prof.MaxIterations = cfg.maxIterations()
	return prof, prof.Validate()
}

// targetExec is the Exec of cfg's target (MCP tools/call with --tool, else
// plain HTTP with body) for at most conns VUs at once, and its description.
// timeoutSet says --timeout was given (0 then means none).
func targetExec(cfg loadConfig, body []byte, conns int, timeoutSet bool, wire *load.Wire) (load.Exec, string, error) {
	h := http.Header{}
	for k, v := range cfg.Headers {
		h.Set(k, v)
	}
	bearer := cfg.Bearer
	if bearer == "" {
		bearer = os.Getenv("SCALEPROOF_BEARER")
	}
	if bearer != "" {
		h.Set("Authorization", "Bearer "+bearer)
	}
	hc := load.NewHTTPClient(conns, time.Duration(cfg.Timeout), wire)
	if cfg.Timeout == 0 && !timeoutSet {
		hc.Timeout = 60 * time.Second
	}
	if cfg.Tool != "" {
		if cfg.Body != "" || cfg.Method != "" {
			return nil, "", errors.New("--tool sends MCP tools/call (POST, JSON-RPC); --method and --body are for plain HTTP")
		}
		var args map[string]any
		raw := cfg.Args
		if len(raw) == 0 {
			raw = json.RawMessage("{}")
		}
		if err := json.Unmarshal(raw, &args); err != nil || args == nil {
			return nil, "", fmt.Errorf("--args %s: want a JSON object like '{\"ms\":200}'", raw)
		}
		exec := load.MCPToolCall(hc, cfg.URL, cfg.Tool, args, h)
		if cfg.Client != "net/http" && strings.HasPrefix(cfg.URL, "http://") {
			fast, err := load.MCPToolCallFast(cfg.URL, cfg.Tool, args, h, load.FastOptions{VUs: conns, Timeout: hc.Timeout, Wire: wire})
			if err != nil {
				return nil, "", err
			}
			exec = fast
		}
		return exec, fmt.Sprintf("MCP tools/call %s at %s", cfg.Tool, cfg.URL), nil
	}
	if len(cfg.Args) > 0 && string(cfg.Args) != "{}" {
		return nil, "", errors.New("--args needs --tool")
	}
	method := strings.ToUpper(cfg.Method)
	if method == "" {
		method = http.MethodGet
		if len(body) > 0 {
			method = http.MethodPost
		}
	}
	exec := load.HTTPCall(hc, method, cfg.URL, body, h)
	if cfg.Client != "net/http" && strings.HasPrefix(cfg.URL, "http://") && method != http.MethodHead && method != http.MethodConnect {
		fast, err := load.HTTPCallFast(method, cfg.URL, body, h, load.FastOptions{VUs: conns, Timeout: hc.Timeout, Wire: wire})
		if err != nil {
			return nil, "", err
		}
		exec = fast
	}
	return exec, method + " " + cfg.URL, nil
}

func (p *loadPlan) describe() string {
	switch {
	case p.closed != nil && p.closed.Executor == load.ExecutorConstantVUs:
		return fmt.Sprintf("constant-vus: %d VUs for %s", p.closed.VUs, p.closed.Duration)
	case p.closed != nil:
		return fmt.Sprintf("ramping-vus: from %d VUs over %d stages (%s)", p.closed.StartVUs, len(p.closed.Stages), p.closed.TotalDuration())
	case p.open.Executor == load.ExecutorConstantArrivalRate:
		return fmt.Sprintf("constant-arrival-rate: %g per %s for %s, VUs %d pre-allocated, %d max",
			p.open.Rate, p.open.TimeUnit, p.open.Duration, p.open.PreAllocatedVUs, p.open.MaxVUs)
	}
	return fmt.Sprintf("ramping-arrival-rate: from %g per %s over %d stages (%s), VUs %d pre-allocated, %d max",
		p.open.StartRate, p.open.TimeUnit, len(p.open.Stages), p.open.TotalDuration(), p.open.PreAllocatedVUs, p.open.MaxVUs)
}

func (p *loadPlan) total() time.Duration {
	if p.closed != nil {
		return p.closed.TotalDuration()
	}
	return p.open.TotalDuration()
}

// loadScenario is the scenario name of a load's records.
const loadScenario = "load"

// runLoad runs the plan, writes the results file and the summary, and
// returns the exit status as an error (nil: 0).
func runLoad(parent context.Context, stdout, stderr io.Writer, p *loadPlan, asJSON, quiet bool) error {
	if parent == nil {
		parent = context.Background()
	}
	resultsPath := filepath.Join(p.dir, run.ResultsFile)
	started := time.Now()
	w, err := createLoadResults(p, resultsPath, started)
	if err != nil {
		return withCode(exitUsage, err)
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	r := &loadRun{p: p, m: load.NewMetrics(), stop: make(chan struct{})}
	interrupted, untrap := r.trap(ctx, cancel, stderr)
	defer untrap()
	done := r.start(ctx)
	tty := !quiet && !asJSON && isTerminal(stderr)
	if !quiet {
		fmt.Fprintf(stderr, "scaleproof load: %s → %s (%s); results in %s\n", p.describe(), p.target, p.model(), resultsPath)
		if p.shards > 1 {
			fmt.Fprintf(stderr, "scaleproof load: over %d pods (an Indexed Job); their results are merged at the end, thresholds judged on the merged result\n", p.shards)
		}
	}
	r.watch(done, stderr, tty, started)
	o := r.record(w, run.Interrupted(interrupted))
	if err := w.Close(reports.End{Ended: time.Now(), ExitCode: o.code, Reason: o.reason}); err != nil {
		fmt.Fprintln(stderr, "scaleproof:", err)
	}

	if asJSON {
		_ = writeJSON(stdout, struct {
			reports.LoadSummary
			Thresholds []reports.Fact `json:"thresholds"`
			Results    string         `json:"results"`
		}{o.sum, o.facts, resultsPath})
	} else {
		writeLoadSummary(stdout, o.sum, p, o.results)
		if r.sharded != nil {
			writeShardsSummary(stdout, r.sharded.record)
		}
		fmt.Fprintf(stdout, "\nresults: %s\n", resultsPath)
	}
	switch o.code {
	case exitOK:
		return nil
	case exitThreshold, exitInterrupted:
		return withCode(o.code, errors.New(""))
	case exitFailed:
		return withCode(o.code, errors.New("a load shard died (see the shards above)"))
	}
	return withCode(o.code, errors.New(o.reason))
}

// createLoadResults makes p's folder and the results file at path, with
// the run's settings and the scenario's start.
func createLoadResults(p *loadPlan, path string, started time.Time) (*reports.Writer, error) {
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, err
	}
	settings := map[string]string{"executor": p.executor, "load_model": p.model(), "target": p.target, "plan": p.describe()}
	for i, t := range p.thresholds {
		settings[fmt.Sprintf("threshold_%d", i+1)] = t.Expr
	}
	w, err := reports.Create(path, reports.RunMeta{RunID: filepath.Base(p.dir), Version: version, Commit: commit,
		Platform: "load", Profile: p.executor, Settings: settings, Started: started})
	if err != nil {
		return nil, err
	}
	_ = w.Write(reports.KindScenario, reports.ScenarioStart{Scenario: loadScenario, Title: p.describe() + " → " + p.target, Started: started})
	return w, nil
}

// loadRun is one run of a loadPlan: what its parts share.
type loadRun struct {
	p        *loadPlan
	m        *load.Metrics
	stop     chan struct{} // closed: no iteration starts, calls in flight get the graceful stop
	stopOnce sync.Once
	aborted  string // why an abortOnFail threshold stopped the run
	// set when the load has ended (start's done)
	runErr  error
	sharded *shardsOutcome
}

func (r *loadRun) stopRun() { r.stopOnce.Do(func() { close(r.stop) }) }

// trap handles Ctrl-C and SIGTERM: the first stops the run (calls in
// flight get the graceful stop) and closes interrupted, a second cancels
// ctx (they are interrupted now).
func (r *loadRun) trap(ctx context.Context, cancel context.CancelCauseFunc, stderr io.Writer) (interrupted <-chan struct{}, untrap func()) {
	return run.OnSignal(ctx, stderr, "\nscaleproof: interrupted; calls in flight get the graceful stop (Ctrl-C again to stop them now)", func(sigc <-chan os.Signal) {
		r.stopRun()
		select {
		case <-sigc:
			cancel(errors.New("interrupted twice"))
		case <-ctx.Done():
		}
	})
}

// start runs the load, in this process or over its shards; done is closed
// when it has ended, r.runErr and r.sharded set.
func (r *loadRun) start(ctx context.Context) (done <-chan struct{}) {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		if r.p.shards > 1 {
			r.sharded, r.runErr = runLoadShards(ctx, r.p, r.stop)
			return
		}
		r.runErr = runProfile(ctx, r.p.closed, r.p.open, r.p.exec, load.WithMetrics(r.m), load.WithStop(r.stop))
	}()
	return ch
}

// runProfile runs the closed profile, or else the open one.
func runProfile(ctx context.Context, closed *load.Profile, open *load.ArrivalProfile, exec load.Exec, opts ...load.Option) (err error) {
	if closed != nil {
		_, err = load.Run(ctx, *closed, exec, opts...)
	} else {
		_, err = load.RunArrival(ctx, *open, exec, opts...)
	}
	return err
}

// watch judges the abortOnFail thresholds (stopping the run when one
// fails) and shows the progress line once a second until done.
func (r *loadRun) watch(done <-chan struct{}, stderr io.Writer, tty bool, started time.Time) {
	p, m := r.p, r.m
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for { // one pass a second until the run ends
		select {
		case <-done:
			if tty {
				fmt.Fprint(stderr, "\r\033[K")
			}
			return
		case <-tick.C:
		}
		sn := m.Snapshot()
		if p.shards > 1 { // the shards report at the end: nothing to judge or show live
			if tty {
				fmt.Fprintf(stderr, "\r\033[K%s/%s  %d shards running", time.Since(started).Round(time.Second), p.total(), p.shards)
			}
			continue
		}
		for _, t := range p.thresholds {
			if t.AbortOnFail && sn.Elapsed >= t.DelayAbortEval && sn.Completed > 0 {
				if res := t.Eval(m); !res.Passed && r.aborted == "" {
					r.aborted = fmt.Sprintf("threshold %s crossed (%s) at %s", t.Expr, res.Observed, sn.Elapsed.Round(time.Second))
					r.stopRun()
				}
			}
		}
		if tty {
			fmt.Fprintf(stderr, "\r\033[K%s", progressLine(sn, p.total(), m))
		}
	}
}

// loadOutcome is a run's summary, its thresholds' results as they are and
// as facts, and its exit code with the reason.
type loadOutcome struct {
	sum     reports.LoadSummary
	results []load.ThresholdResult
	facts   []reports.Fact
	code    int
	reason  string
}

// record writes what was measured, whatever happened, and the verdict to
// w, and judges the run.
func (r *loadRun) record(w *reports.Writer, interrupted bool) loadOutcome {
	p, m, sharded := r.p, r.m, r.sharded
	if sharded != nil {
		m = sharded.merged
		_ = w.Write(scenarios.KindLoadShards, sharded.record)
	}
	writeSeconds(w, m)
	o := loadOutcome{sum: summarize(m, p, loadScenario)}
	o.sum.AbortedReason = r.aborted
	results, allPassed := load.EvalThresholds(p.thresholds, m)
	o.results = results
	for _, t := range results {
		o.facts = append(o.facts, reports.Fact{Name: "threshold " + t.Threshold.Expr, Passed: t.Passed, Detail: t.Observed})
	}
	shardsDied := sharded != nil && !sharded.record.Passed
	if sharded != nil {
		o.facts = append(o.facts, reports.Fact{Name: fmt.Sprintf("load over %d shards", p.shards), Passed: sharded.record.Passed, Detail: sharded.record.Detail})
	}
	v := reports.Verdict{Scenario: loadScenario, Passed: allPassed && r.runErr == nil && !interrupted && !shardsDied, Facts: o.facts,
		Calls: o.sum.Calls, DurationS: o.sum.DurationS, P95ms: o.sum.P95ms, Interrupted: interrupted}
	if r.runErr != nil {
		v.Error = r.runErr.Error()
	}
	_ = w.Write(reports.KindLoad, o.sum)
	_ = w.Write(reports.KindVerdict, v)
	o.code, o.reason = exitOK, "done"
	switch {
	case interrupted:
		o.code, o.reason = exitInterrupted, "interrupted"
	case r.runErr != nil:
		o.code, o.reason = exitUsage, r.runErr.Error()
	case shardsDied:
		o.code, o.reason = exitFailed, "load over shards: "+sharded.record.Detail
	case !allPassed:
		o.code, o.reason = exitThreshold, "a threshold was crossed"
	}
	return o
}

// writeSeconds writes m's per-second records, each with its histogram.
func writeSeconds(w *reports.Writer, m *load.Metrics) {
	var inFlight int64
	for i, sec := range m.Seconds() {
		inFlight += sec.Started - sec.Completed
		rs := reports.Second{Scenario: loadScenario, T: sec.Offset, VUs: sec.VUs,
			Calls: classCalls(sec.Classes), P50ms: msOf(sec.Latencies.P50), P95ms: msOf(sec.Latencies.P95),
			P99ms: msOf(sec.Latencies.P99), InFlight: inFlight, Dropped: sec.Dropped}
		if h := m.SecondHistogram(i); h != nil {
			if b, err := h.Encode(hdr.V2CompressedEncodingCookieBase); err == nil {
				rs.Histogram = string(b)
			}
		}
		_ = w.Write(reports.KindSecond, rs)
	}
}

func msOf(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Millisecond)*100) / 100 }

func classCalls(t map[load.Class]int64) reports.Calls {
	return reports.Calls{OK: t[load.ClassOK], TooMany: t[load.Class429], Other4xx: t[load.Class4xx], Server5xx: t[load.Class5xx],
		JSONRPCError: t[load.ClassJSONRPCError], BadResponse: t[load.ClassBadResponse],
		Transport: t[load.ClassTransport], Interrupted: t[load.ClassInterrupted]}
}

func summarize(m *load.Metrics, p *loadPlan, scenario string) reports.LoadSummary {
	lat := m.Latencies()
	s := reports.LoadSummary{Scenario: scenario, Executor: p.executor, Model: p.model(), Target: p.target,
		Iterations: m.Completed(), Dropped: m.DroppedIterations(), Calls: classCalls(m.Totals()),
		DurationS: math.Round(m.Duration().Seconds()*1000) / 1000, PeakVUs: m.PeakVUs(),
		MinMs: msOf(lat.Min), MeanMs: msOf(lat.Mean), P50ms: msOf(lat.P50), P90ms: msOf(m.Quantile(90)),
		P95ms: msOf(lat.P95), P99ms: msOf(lat.P99), MaxMs: msOf(lat.Max),
		DataSent: p.wire.Sent(), DataReceived: p.wire.Received()}
	if b, err := m.Histogram().Encode(hdr.V2CompressedEncodingCookieBase); err == nil {
		s.Histogram = string(b)
	}
	for _, e := range m.Errors("") {
		s.Errors = append(s.Errors, reports.ErrorReason{Class: string(e.Class), Error: e.Err, Count: e.N})
	}
	return s
}

func progressLine(sn load.Snapshot, total time.Duration, m *load.Metrics) string {
	rate := 0.0
	if sn.Elapsed > 0 {
		rate = float64(sn.Completed) / sn.Elapsed.Seconds()
	}
	classes := make([]string, 0, len(sn.Totals))
	for _, c := range load.AllClasses() {
		if n := sn.Totals[c]; n > 0 {
			classes = append(classes, fmt.Sprintf("%s %d", c, n))
		}
	}
	return fmt.Sprintf("%s/%s  vus %d  iterations %d (%.0f/s)  in flight %d  %s  p95 %s  dropped %d",
		sn.Elapsed.Round(time.Second), total, sn.VUs, sn.Completed, rate, sn.InFlight,
		strings.Join(classes, " "), m.Quantile(95).Round(100*time.Microsecond), m.DroppedIterations())
}

func humanBytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// writeLoadSummary prints the end-of-test summary, in k6's spirit.
func writeLoadSummary(w io.Writer, s reports.LoadSummary, p *loadPlan, ths []load.ThresholdResult) {
	per := func(n float64) string {
		if s.DurationS <= 0 {
			return ""
		}
		return fmt.Sprintf("%.1f/s", n/s.DurationS)
	}
	row := func(name, val string) {
		fmt.Fprintf(w, "  %s%s %s\n", name, strings.Repeat(".", max(20-len(name), 2)), val)
	}
	fmt.Fprintf(w, "\n  %s\n  %s\n", p.describe(), p.target)
	if s.Model == reports.ModelOpen {
		fmt.Fprintln(w, "  open model: latency from each iteration's scheduled start")
	} else {
		fmt.Fprintln(w, "  closed-loop: each VU waits for its answer; a stalled target delays calls rather than")
		fmt.Fprintln(w, "  showing in the latency (use an arrival-rate executor to see it)")
	}
	fmt.Fprintln(w)
	row("iterations", fmt.Sprintf("%d  %s", s.Iterations, per(float64(s.Iterations))))
	if p.open != nil || s.Dropped > 0 {
		row("dropped_iterations", fmt.Sprintf("%d  %s", s.Dropped, per(float64(s.Dropped))))
	}
	total := s.Calls.Total()
	type kv struct {
		k string
		v int64
	}
	cls := []kv{{"ok", s.Calls.OK}, {"429", s.Calls.TooMany}, {"4xx", s.Calls.Other4xx}, {"5xx", s.Calls.Server5xx},
		{"jsonrpc_error", s.Calls.JSONRPCError}, {"bad_response", s.Calls.BadResponse}, {"transport", s.Calls.Transport},
		{"interrupted", s.Calls.Interrupted}}
	sort.SliceStable(cls, func(i, j int) bool { return cls[i].v > cls[j].v })
	for _, c := range cls {
		if c.v > 0 || c.k == "ok" {
			pct := 0.0
			if total > 0 {
				pct = 100 * float64(c.v) / float64(total)
			}
			row("calls "+c.k, fmt.Sprintf("%d  %.2f%%", c.v, pct))
		}
	}
	f := func(v float64) string {
		return (time.Duration(v * float64(time.Millisecond))).Round(10 * time.Microsecond).String()
	}
	row("latency", fmt.Sprintf("avg=%s min=%s med=%s p90=%s p95=%s p99=%s max=%s",
		f(s.MeanMs), f(s.MinMs), f(s.P50ms), f(s.P90ms), f(s.P95ms), f(s.P99ms), f(s.MaxMs)))
	row("vus_max", strconv.Itoa(s.PeakVUs))
	data := func(n int64) string { // k6's "3.9 MB  1.9 MB/s": the rate in the unit that fits it
		if s.DurationS <= 0 {
			return humanBytes(n)
		}
		return humanBytes(n) + "  " + humanBytes(int64(float64(n)/s.DurationS)) + "/s"
	}
	row("data_sent", data(s.DataSent))
	row("data_received", data(s.DataReceived))
	row("duration", (time.Duration(s.DurationS * float64(time.Second))).Round(time.Millisecond).String())
	if len(s.Errors) > 0 {
		fmt.Fprintln(w, "\n  errors (distinct reasons, the most frequent first)")
		for _, e := range s.Errors {
			fmt.Fprintf(w, "    %-13s %7d  %s\n", e.Class, e.Count, e.Error)
		}
	}
	if s.AbortedReason != "" {
		fmt.Fprintf(w, "\n  stopped early: %s\n", s.AbortedReason)
	}
	if len(ths) > 0 {
		fmt.Fprintln(w, "\n  thresholds")
		for _, r := range ths {
			mark := "✓"
			if !r.Passed {
				mark = "✗"
			}
			fmt.Fprintf(w, "    %s %-24s %s\n", mark, r.Threshold.Expr, r.Observed)
		}
	}
}
