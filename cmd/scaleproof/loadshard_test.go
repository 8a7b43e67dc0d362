package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

func TestRunShard(t *testing.T) {
	srv := mcpEcho(t)
	prof := load.ConstantVUs(5, 600*time.Millisecond)
	prof.GracefulStop = time.Second
	prof.ThinkTime = 20 * time.Millisecond
	spec := load.ShardSpec{Start: time.Now().Add(150 * time.Millisecond), Shards: 3, Closed: &prof,
		Target: load.ShardTarget{URL: srv.URL + "/mcp", Tool: "work", Args: json.RawMessage(`{"ms":1}`),
			Headers: map[string]string{"Authorization": "Bearer k1"}}}
	js, err := spec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	spec, err = load.DecodeShardSpec(js)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	var results []load.ShardResult
	for i := range 3 {
		var out bytes.Buffer
		if err := runShard(context.Background(), &out, log, spec, i, nil, time.Now); err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		r, err := load.ReadShardResult(out.Bytes())
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		if err := r.Check(i, 3); err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		want := int(load.ShareInt(5, i, 3)) // 2/2/1
		if r.PeakVUs != want || r.Totals[load.ClassOK] == 0 || r.Completed != r.Totals[load.ClassOK] {
			t.Errorf("shard %d: peak VUs %d (want %d), totals %v", i, r.PeakVUs, want, r.Totals)
		}
		if r.Start.Before(spec.Start) {
			t.Errorf("shard %d started at %s, before the common start %s", i, r.Start, spec.Start)
		}
		results = append(results, r)
	}
	m := load.MergeShards(spec.Start, results)
	var sum int64
	for _, r := range results {
		sum += r.Completed
	}
	if m.Completed() != sum || sum == 0 {
		t.Errorf("merged %d, shards %d", m.Completed(), sum)
	}
}

func TestRunShardIdleAndStopped(t *testing.T) {
	prof := load.ConstantVUs(2, time.Minute)
	spec := load.ShardSpec{Start: time.Now().Add(time.Hour), Shards: 3, Closed: &prof, Target: load.ShardTarget{URL: "http://127.0.0.1:1/mcp", Tool: "work"}}
	log := slog.New(slog.DiscardHandler)
	var out bytes.Buffer
	if err := runShard(context.Background(), &out, log, spec, 2, nil, time.Now); err != nil {
		t.Fatal(err)
	}
	if r, err := load.ReadShardResult(out.Bytes()); err != nil || !r.Idle || r.Check(2, 3) != nil {
		t.Errorf("shard 2 of 3 with 2 VUs: %+v %v, want an idle result", r, err)
	}
	// stopped while waiting for a start an hour away: an empty result at once
	stop := make(chan struct{})
	close(stop)
	out.Reset()
	if err := runShard(context.Background(), &out, log, spec, 0, stop, time.Now); err != nil {
		t.Fatal(err)
	}
	if r, err := load.ReadShardResult(out.Bytes()); err != nil || r.Completed != 0 {
		t.Errorf("stopped before the start: %+v %v", r, err)
	}
}

func TestConfigMapStop(t *testing.T) {
	kc := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "ns"}, Data: map[string]string{"stop": ""}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := configMapStop(ctx, kc, "ns", "l", 5*time.Millisecond, slog.New(slog.DiscardHandler))
	select {
	case <-ch:
		t.Fatal("stopped before the key was set")
	case <-time.After(30 * time.Millisecond): // not a synchronisation: a window in which nothing must happen
	}
	patch := []byte(`{"data":{"` + deploykube.LoadShardStopKey + `":"now"}}`)
	if _, err := kc.CoreV1().ConfigMaps("ns").Patch(ctx, "l", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("stop key set, the shard did not stop")
	}
}

// TestLoadShardsNeedKubernetes: --load-shards 3 on local is a usage error
// (exit 2) that says why, before anything starts; 0 is out of range.
func TestLoadShardsNeedKubernetes(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("ARTIFACTS", "")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--ref-bin", self, "--load-shards", "3"}, "platform local runs the load in this process"},
		{[]string{"--ref-bin", self, "--load-shards", "0"}, "--load-shards 0: want 1 to 1000"},
	} {
		c := newRunCmd()
		c.SetOut(io.Discard)
		c.SetErr(io.Discard)
		c.SetArgs(tc.args)
		c.SilenceUsage, c.SilenceErrors = true, true
		err := c.Execute()
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want exit 2 saying %q", tc.args, err, tc.want)
		}
		if ents, _ := os.ReadDir("."); len(ents) != 0 {
			t.Errorf("%v left %v", tc.args, ents)
		}
	}
}

// podShards is a LoadSharder whose "pods" run runShard here, as the Job's
// pods run `scaleproof load-shard`; shard dead, when >= 0, fails as an
// OOM-killed pod would.
type podShards struct{ dead int }

func (podShards) ShardEdgeURL(context.Context) (string, error) { return "", nil }

func (f podShards) RunLoadShards(ctx context.Context, job platform.ShardJob) ([]platform.ShardOutput, error) {
	spec, err := load.DecodeShardSpec(strings.TrimPrefix(job.Args[0], "--spec="))
	if err != nil {
		return nil, err
	}
	spec.Start = time.Now().Add(100 * time.Millisecond) // not the harness's lead, in a test
	outs := make([]platform.ShardOutput, job.Shards)
	var wg sync.WaitGroup
	for i := range job.Shards {
		wg.Go(func() {
			outs[i] = platform.ShardOutput{Index: i, Pod: fmt.Sprintf("%s-%d", job.Name, i)}
			if i == f.dead {
				outs[i].Failure = "pod " + outs[i].Pod + " failed: OOMKilled (exit code 137)"
				return
			}
			var b bytes.Buffer
			if err := runShard(ctx, &b, slog.New(slog.DiscardHandler), spec, i, job.Stop, time.Now); err != nil {
				outs[i].Failure = err.Error()
			}
			outs[i].Log = b.Bytes()
		})
	}
	wg.Wait()
	return outs, nil
}

// TestLoadSharded: `load` over 3 shards prints each shard and the merged
// figures, judges its thresholds on the merged result, and writes the
// load_shards record; a dead shard is named with why, and the exit is 1.
func TestLoadSharded(t *testing.T) {
	srv := mcpEcho(t)
	for _, tc := range []struct {
		name string
		dead int
		code int
		want []string
	}{
		{"all report", -1, exitOK, []string{"✓ shard 0", "✓ shard 2", "3 of 3 shards reported; calls merged", "✓ iterations>30"}},
		{"one dies", 1, exitFailed, []string{"✗ shard 1  ", "died: pod ", "OOMKilled (exit code 137)", "2 of 3 shards reported"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			th, _ := load.ParseThreshold("iterations>30")
			cfg := loadConfig{URL: srv.URL + "/mcp", Tool: "work", Headers: map[string]string{"Authorization": "Bearer k1"}, VUs: 5,
				Duration: duration(time.Second), ThinkTime: duration(20 * time.Millisecond), Artifacts: dir,
				Thresholds: []thresholdSpec{{th}}}
			p, err := planLoad(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			p.shards, p.sharder = 3, podShards{dead: tc.dead}
			var out, errb bytes.Buffer
			err = runLoad(context.Background(), &out, &errb, p, false, true)
			code := exitOK
			var ee *exitError
			if errors.As(err, &ee) {
				code = ee.code
			}
			if code != tc.code {
				t.Errorf("exit %d (%v), want %d\n%s", code, err, tc.code, out.String())
			}
			t.Log(out.String())
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("summary lacks %q:\n%s", w, out.String())
				}
			}
			b, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
			if err != nil || !bytes.Contains(b, []byte(`"kind":"`+scenarios.KindLoadShards+`"`)) {
				t.Errorf("results file without a %s record: %v", scenarios.KindLoadShards, err)
			}
		})
	}
}
