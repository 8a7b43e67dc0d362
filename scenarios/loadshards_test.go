package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// inProcessShards is a LoadSharder whose shards run here, as the pods'
// `scaleproof load-shard` would (split, run from the start, framed result
// in the "log"); shard dead, when >= 0, fails as an OOM-killed pod.
type inProcessShards struct {
	edge string
	dead int
	mu   sync.Mutex
	jobs []platform.ShardJob
}

func (f *inProcessShards) ShardEdgeURL(context.Context) (string, error) { return f.edge, nil }

func (f *inProcessShards) RunLoadShards(ctx context.Context, job platform.ShardJob) ([]platform.ShardOutput, error) {
	f.mu.Lock()
	f.jobs = append(f.jobs, job)
	f.mu.Unlock()
	spec, err := load.DecodeShardSpec(strings.TrimPrefix(job.Args[0], "--spec="))
	if err != nil {
		return nil, err
	}
	outs := make([]platform.ShardOutput, job.Shards)
	var wg sync.WaitGroup
	for i := range job.Shards {
		wg.Go(func() {
			outs[i] = platform.ShardOutput{Index: i, Pod: fmt.Sprintf("%s-%d", job.Name, i)}
			if i == f.dead {
				outs[i].Failure = "pod " + outs[i].Pod + " failed: OOMKilled (exit code 137)"
				return
			}
			p, err := spec.Closed.Split(i, spec.Shards)
			if err != nil {
				outs[i].Failure = err.Error()
				return
			}
			var args map[string]any
			_ = json.Unmarshal(spec.Target.Args, &args)
			exec := load.MCPToolCall(http.DefaultClient, spec.Target.URL, spec.Target.Tool, args, nil)
			if d := time.Until(spec.Start); d > 0 {
				select {
				case <-time.After(d): // the shard's wait for the common start (what is tested is the merge)
				case <-ctx.Done():
					return
				}
			}
			m, runErr := load.Run(ctx, p, exec, load.WithStop(job.Stop))
			r, err := load.NewShardResult(m, i, spec.Shards, 0, 0, runErr)
			if err != nil {
				outs[i].Failure = err.Error()
				return
			}
			var b bytes.Buffer
			_ = load.WriteShardResult(&b, r)
			outs[i].Log = b.Bytes()
		})
	}
	wg.Wait()
	return outs, nil
}

func mcpServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID any `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		id, _ := json.Marshal(req.ID)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}`, id)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestShardedLoad: a scenario's load over 3 shards: the loadRun's calls are
// the merged ones, the fact "load over 3 shards" holds with merged = sum,
// and the Job got the in-cluster URL of the zone; a dead shard fails the
// fact, naming it and why, and the load's Err says so.
func TestShardedLoad(t *testing.T) {
	srv := mcpServer(t)
	for _, tc := range []struct {
		name string
		dead int
	}{{"all shards report", -1}, {"a shard dies", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			sh := &inProcessShards{edge: srv.URL, dead: tc.dead}
			env := &Env{HTTP: http.DefaultClient, Log: slog.New(slog.DiscardHandler), Shards: 3, Sharder: sh,
				ShardLead: 100 * time.Millisecond}
			env.Endpoints.Group = "g"
			s := newScope(env, Scenario{Name: "burst"})
			p := load.ConstantVUs(7, 400*time.Millisecond)
			p.ThinkTime, p.GracefulStop = 10*time.Millisecond, time.Second
			l := startLoad(t.Context(), env, s, p, 1)
			l.Wait()
			if len(sh.jobs) != 1 || sh.jobs[0].Shards != 3 || sh.jobs[0].Timeout <= time.Minute {
				t.Fatalf("jobs %+v", sh.jobs)
			}
			spec, _ := load.DecodeShardSpec(strings.TrimPrefix(sh.jobs[0].Args[0], "--spec="))
			if want := srv.URL + "/g/g/z/" + s.Zone + "/mcp"; spec.Target.URL != want || spec.Closed.VUs != 7 {
				t.Errorf("spec target %s with %d VUs, want %s with 7 (each shard splits)", spec.Target.URL, spec.Closed.VUs, want)
			}
			var fact *struct {
				ok     bool
				detail string
			}
			for _, f := range s.facts {
				if f.Name == "load over 3 shards" {
					fact = &struct {
						ok     bool
						detail string
					}{f.Passed, f.Detail}
				}
			}
			if fact == nil {
				t.Fatalf("no shard fact in %+v", s.facts)
			}
			t.Logf("fact: %s", fact.detail)
			c := l.Calls()
			if tc.dead < 0 {
				if !fact.ok || l.Err() != nil || c.OK == 0 || !strings.Contains(fact.detail, fmt.Sprintf("calls merged %d = ", c.OK)) {
					t.Errorf("fact %v %q, err %v, calls %+v", fact.ok, fact.detail, l.Err(), c)
				}
				if w := l.window(); !w.Start.Equal(spec.Start) || w.End.Before(w.Start) {
					t.Errorf("window %s..%s, want from the common start %s", w.Start, w.End, spec.Start)
				}
				return
			}
			if fact.ok || l.Err() == nil || !strings.Contains(fact.detail, "shard 1 of 3 (pod "+sh.jobs[0].Name+"-1) died: pod "+sh.jobs[0].Name+"-1 failed: OOMKilled") ||
				!strings.Contains(l.Err().Error(), "died") {
				t.Errorf("fact %v %q, err %v", fact.ok, fact.detail, l.Err())
			}
			if c.OK == 0 {
				t.Errorf("the live shards' calls are not counted: %+v", c)
			}
		})
	}
	t.Run("stopped early", func(t *testing.T) {
		sh := &inProcessShards{edge: srv.URL, dead: -1}
		env := &Env{HTTP: http.DefaultClient, Log: slog.New(slog.DiscardHandler), Shards: 2, Sharder: sh, ShardLead: 50 * time.Millisecond}
		s := newScope(env, Scenario{Name: "sustained"})
		p := load.ConstantVUs(4, time.Hour)
		p.ThinkTime, p.GracefulStop = 10*time.Millisecond, time.Second
		l := startLoad(t.Context(), env, s, p, 1)
		l.Stop()
		done := make(chan struct{})
		go func() { l.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("a stopped sharded load did not end")
		}
		if err := l.Err(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("err %v", err)
		}
	})
}
