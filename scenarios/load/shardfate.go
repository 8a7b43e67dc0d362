package load

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// ShardOutput is what the harness got back for one shard of a distributed
// load: its pod's log, or why it has none (a platform's words).
type ShardOutput struct {
	Index   int
	Pod     string
	Log     []byte
	Failure string // "" when the pod succeeded
}

// Shard states.
const (
	ShardOK   = "ok"   // its result was read and merged
	ShardIdle = "idle" // its share was empty (fewer VUs than shards): merged, nothing in it
	ShardDead = "dead" // no usable result: Why says why; not merged
)

// ShardFate is what became of one shard, for the results file and the
// terminal.
type ShardFate struct {
	Index int    `json:"shard"`
	Pod   string `json:"pod,omitempty"`
	State string `json:"state"`
	Why   string `json:"why,omitempty"`
	// From its result (zero for a dead shard):
	Started   int64           `json:"started"`
	Completed int64           `json:"completed"`
	Totals    map[Class]int64 `json:"totals,omitempty"`
	PeakVUs   int             `json:"peak_vus"`
	P95       time.Duration   `json:"p95_ns"`
	// StartOffset is its run start minus the common start (how late it began).
	StartOffset time.Duration `json:"start_offset_ns"`
	RunError    string        `json:"run_error,omitempty"`
}

// CollectShards reads every shard's result from outs (shards 0..n-1; an
// index missing from outs is a dead shard) and returns each shard's fate
// and the results to merge (those of the ok and idle shards, passing
// Check). A shard is dead when its pod failed, its log holds no result,
// or the result is bad (does not decode, fails Check); Why says which,
// with the log's last line when there is no result.
func CollectShards(outs []ShardOutput, n int, start time.Time) ([]ShardFate, []ShardResult) {
	fates := make([]ShardFate, n)
	seen := make([]bool, n)
	for i := range fates {
		fates[i] = ShardFate{Index: i, State: ShardDead, Why: "no output from the platform for this shard"}
	}
	var rs []ShardResult
	for _, o := range outs {
		if o.Index < 0 || o.Index >= n || seen[o.Index] {
			continue
		}
		seen[o.Index] = true
		f := &fates[o.Index]
		f.Pod = o.Pod
		if o.Failure != "" {
			f.Why = o.Failure
			if tail := lastLine(o.Log); tail != "" {
				f.Why += "; its log ends: " + tail
			}
			continue
		}
		r, err := ReadShardResult(o.Log)
		if errors.Is(err, ErrNoShardResult) {
			f.Why = "its pod succeeded but its log holds no result"
			if tail := lastLine(o.Log); tail != "" {
				f.Why += "; it ends: " + tail
			}
			continue
		}
		if err == nil {
			err = r.Check(o.Index, n)
		}
		if err != nil {
			f.Why = "bad result: " + err.Error()
			continue
		}
		f.State, f.Why = ShardOK, ""
		if r.Idle {
			f.State = ShardIdle
		}
		f.Started, f.Completed, f.Totals, f.PeakVUs = r.Started, r.Completed, r.Totals, r.PeakVUs
		f.StartOffset, f.RunError = r.Start.Sub(start), r.Error
		if h, err := decodeHist(r.Histogram, histSigFigs); err == nil {
			f.P95 = latenciesOf(h).P95
		}
		rs = append(rs, r)
	}
	return fates, rs
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.Contains(l, shardMarker) {
			if len(l) > 200 {
				l = l[:200] + "…"
			}
			return l
		}
	}
	return ""
}

// JudgeShards is the check of a distributed load, for its verdict: every
// shard reported (none dead), and the merged counts (started, completed,
// each class) equal the sums of the shards'. detail names each dead shard
// and why, then the merged-vs-sum figures and the merged p95 beside each
// shard's, e.g.
//
//	3 of 3 shards reported; calls merged 9116 = 3040 + 3038 + 3038; p95 merged 210ms, by shard 205ms / 212ms / 209ms
func JudgeShards(fates []ShardFate, merged *Metrics) (ok bool, detail string) {
	var dead, parts, p95s []string
	var started, completed int64
	totals := map[Class]int64{}
	reported := 0
	for _, f := range fates {
		if f.State == ShardDead {
			who := fmt.Sprintf("shard %d of %d", f.Index, len(fates))
			if f.Pod != "" {
				who += " (pod " + f.Pod + ")"
			}
			dead = append(dead, who+" died: "+f.Why)
			parts = append(parts, "dead")
			p95s = append(p95s, "dead")
			continue
		}
		reported++
		started += f.Started
		completed += f.Completed
		for c, n := range f.Totals {
			totals[c] += n
		}
		parts = append(parts, fmt.Sprint(f.Completed))
		p95s = append(p95s, roundLatency(f.P95).String())
	}
	ok = len(dead) == 0 && len(fates) > 0
	sumOK := merged.Started() == started && merged.Completed() == completed && maps.Equal(nonZero(merged.Totals()), nonZero(totals))
	if !sumOK {
		ok = false
	}
	eq := "="
	if !sumOK {
		eq = "≠ (merge error)"
	}
	sum := fmt.Sprintf("%d of %d shards reported; calls merged %d %s %s; p95 merged %s, by shard %s",
		reported, len(fates), merged.Completed(), eq, strings.Join(parts, " + "),
		roundLatency(merged.Latencies().P95), strings.Join(p95s, " / "))
	return ok, strings.Join(append(dead, sum), "; ")
}

// ShardsSum is the last part of JudgeShards' detail: the merged-vs-sum
// figures without the dead shards' lines.
func ShardsSum(detail string) string {
	if i := strings.LastIndex(detail, "; "); i >= 0 && strings.Contains(detail[:i], " died: ") {
		if j := strings.Index(detail, " shards reported; "); j >= 0 {
			if k := strings.LastIndex(detail[:j], "; "); k >= 0 {
				return detail[k+2:]
			}
		}
	}
	return detail
}

// roundLatency keeps three significant figures or so: 480µs, 12.34ms, 246.4ms.
func roundLatency(d time.Duration) time.Duration {
	if d < 100*time.Millisecond {
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(100 * time.Microsecond)
}

func nonZero(m map[Class]int64) map[Class]int64 {
	out := map[Class]int64{}
	for _, c := range slices.Sorted(maps.Keys(m)) {
		if m[c] != 0 {
			out[c] = m[c]
		}
	}
	return out
}
