package scenarios

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// DefaultShardLead is how long before a sharded load's common start its
// Job is created: the pods start in between (on a node that has the image:
// every pod within 2 s on kind), and a pod that starts later begins at
// once, its seconds aligned by wall clock.
const DefaultShardLead = 4 * time.Second

// KindLoadShards is the results record of a sharded load: LoadShards.
const KindLoadShards = "load_shards"

// LoadShards is what a sharded load's results record holds: the Job, each
// shard's fate and share, and the merged figures beside the shards' sum.
type LoadShards struct {
	Scenario string           `json:"scenario"`
	Job      string           `json:"job"`
	Shards   int              `json:"shards"`
	VUs      int              `json:"vus"` // the whole load's peak VUs
	Start    time.Time        `json:"start"`
	Fates    []load.ShardFate `json:"fates"`
	Merged   LoadShardsMerged `json:"merged"`
	Passed   bool             `json:"passed"`
	Detail   string           `json:"detail"`
}

// LoadShardsMerged are the merged result's figures.
type LoadShardsMerged struct {
	Started     int64     `json:"started"`
	Completed   int64     `json:"completed"`
	SumOfShards int64     `json:"sum_of_shards_completed"`
	P95ms       float64   `json:"p95_ms"`
	ShardP95ms  []float64 `json:"shard_p95_ms"`
}

// shardedLoad is a loadRun's sharded part.
type shardedLoad struct {
	job    string
	shards int
	vus    int
	start  time.Time
}

// startShardedLoad runs profile p as e.Shards shards on the platform's
// Sharder: each pod runs its share of the VUs from a common start, and
// when they have all ended their results are merged into the loadRun's
// Metrics, which the scenario's facts then read as a local load's. The
// load's fact "load over N shards" fails when a shard died (which, and
// why) or the merge does not add up; the load's Err says so too.
func startShardedLoad(ctx context.Context, e *Env, s *Scope, p load.Profile, workMS int) *loadRun {
	lead := e.ShardLead
	if lead <= 0 {
		lead = DefaultShardLead
	}
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	job := "load-" + strings.Trim(s.Zone, "-")
	if len(job) > 47 {
		job = strings.TrimRight(job[:47], "-")
	}
	job += "-" + hex.EncodeToString(b)
	sh := &shardedLoad{job: job, shards: e.Shards, vus: p.PeakVUs(), start: time.Now().Add(lead).UTC()}
	l := &loadRun{s: s, m: load.NewMetrics(), stopCh: make(chan struct{}), done: make(chan struct{}), shards: sh}
	if p.Executor == load.ExecutorConstantVUs {
		l.vus = p.VUs
	}
	go func() {
		defer close(l.done)
		m, err := runShards(ctx, e, s, sh, p, workMS, l.stopCh)
		l.mu.Lock()
		defer l.mu.Unlock()
		if m != nil {
			l.m = m
		}
		l.err = err
		if l.ended.IsZero() { // ran its course: it ended when the last shard did
			l.ended = time.Now()
			if m != nil && m.Duration() > 0 {
				l.ended = m.Start().Add(m.Duration())
			}
		}
	}()
	return l
}

func runShards(ctx context.Context, e *Env, s *Scope, sh *shardedLoad, p load.Profile, workMS int, stop <-chan struct{}) (*load.Metrics, error) {
	what := fmt.Sprintf("load over %d shards", sh.shards)
	edge, err := e.Sharder.ShardEdgeURL(ctx)
	if err != nil {
		s.Check(what, false, "not started: %v", err)
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	args, _ := json.Marshal(map[string]any{"ms": workMS})
	spec := load.ShardSpec{Start: sh.start, Shards: sh.shards, Closed: &p,
		Target: load.ShardTarget{URL: edge + "/g/" + e.Endpoints.Group + "/z/" + s.Zone + "/mcp", Tool: "work", Args: args}}
	js, err := spec.Encode()
	if err == nil {
		err = spec.Validate()
	}
	if err != nil {
		s.Check(what, false, "not started: %v", err)
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	timeout := time.Until(sh.start) + spec.TotalDuration() + time.Minute
	e.Log.Info("sharded load", "scenario", s.Name, "job", sh.job, "shards", sh.shards, "vus", sh.vus,
		"start", sh.start.Format(time.RFC3339Nano), "target", spec.Target.URL)
	outs, err := e.Sharder.RunLoadShards(ctx, platform.ShardJob{Name: sh.job, Shards: sh.shards,
		Args: []string{"--spec=" + js}, Stop: stop, Timeout: timeout})
	if err != nil {
		s.Check(what, false, "not run: %v", err)
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	raw := make([]load.ShardOutput, len(outs))
	for i, o := range outs {
		raw[i] = load.ShardOutput{Index: o.Index, Pod: o.Pod, Log: o.Log, Failure: o.Failure}
	}
	fates, results := load.CollectShards(raw, sh.shards, sh.start)
	m := load.MergeShards(sh.start, results)
	ok, detail := load.JudgeShards(fates, m)
	s.Check(what, ok, "%s", detail)
	rec := LoadShards{Scenario: s.Name, Job: sh.job, Shards: sh.shards, VUs: sh.vus, Start: sh.start, Fates: fates,
		Passed: ok, Detail: detail,
		Merged: LoadShardsMerged{Started: m.Started(), Completed: m.Completed(), P95ms: ms(m.Latencies().P95)}}
	for _, f := range fates {
		rec.Merged.SumOfShards += f.Completed
		rec.Merged.ShardP95ms = append(rec.Merged.ShardP95ms, math.Round(float64(f.P95)/float64(time.Millisecond)*10)/10)
	}
	e.write(KindLoadShards, rec)
	if ok {
		e.Log.Info("sharded load merged", "scenario", s.Name, "job", sh.job, "detail", detail)
		return m, nil
	}
	e.Log.Warn("sharded load: shards died or did not add up", "scenario", s.Name, "job", sh.job, "detail", detail)
	if err := ctx.Err(); err != nil {
		return m, fmt.Errorf("%s: %w", what, context.Cause(ctx))
	}
	return m, fmt.Errorf("%s: %s", what, detail)
}
