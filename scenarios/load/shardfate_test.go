package load

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

func framed(t *testing.T, r ShardResult) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("level=INFO msg=\"load shard: ready\"\n")
	if err := WriteShardResult(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestCollectAndJudgeShards(t *testing.T) {
	res := func(i int, seed uint64) ShardResult {
		return resultOf(t, shardMetrics(t, t0, 3*time.Second, sample(seed, 400, 0, 2*time.Second)), i, 3)
	}
	wrongShard := res(0, 9) // a result that claims to be shard 0, in shard 2's log
	t.Run("all reported", func(t *testing.T) {
		outs := []ShardOutput{{Index: 2, Pod: "p2", Log: framed(t, res(2, 3))}, {Index: 0, Pod: "p0", Log: framed(t, res(0, 1))}, {Index: 1, Pod: "p1", Log: framed(t, res(1, 2))}}
		fates, rs := CollectShards(outs, 3, t0)
		if len(rs) != 3 {
			t.Fatalf("%d results, want 3: %+v", len(rs), fates)
		}
		m := MergeShards(t0, rs)
		ok, detail := JudgeShards(fates, m)
		want := fmt.Sprintf("3 of 3 shards reported; calls merged %d = %d + %d + %d", m.Completed(), fates[0].Completed, fates[1].Completed, fates[2].Completed)
		if !ok || !strings.HasPrefix(detail, want) || !strings.Contains(detail, "p95 merged") {
			t.Errorf("ok %v, detail %q, want prefix %q", ok, detail, want)
		}
	})
	t.Run("dead shards", func(t *testing.T) {
		outs := []ShardOutput{
			{Index: 0, Pod: "p0", Log: framed(t, res(0, 1))},
			{Index: 1, Pod: "p1", Log: []byte("fatal error: out of memory\n"), Failure: "pod p1 failed: OOMKilled (exit code 137)"},
			{Index: 2, Pod: "p2", Log: framed(t, wrongShard)},
		}
		fates, rs := CollectShards(outs, 3, t0)
		if len(rs) != 1 || fates[0].State != ShardOK || fates[1].State != ShardDead || fates[2].State != ShardDead {
			t.Fatalf("fates %+v", fates)
		}
		ok, detail := JudgeShards(fates, MergeShards(t0, rs))
		for _, want := range []string{"shard 1 of 3 (pod p1) died: pod p1 failed: OOMKilled (exit code 137); its log ends: fatal error: out of memory",
			"shard 2 of 3 (pod p2) died: bad result: result is shard 0 of 3, want shard 2 of 3", "1 of 3 shards reported", "+ dead + dead"} {
			if !strings.Contains(detail, want) {
				t.Errorf("detail %q lacks %q", detail, want)
			}
		}
		if ok {
			t.Error("a load with dead shards judged ok")
		}
		if sum := ShardsSum(detail); !strings.HasPrefix(sum, "1 of 3 shards reported; calls merged") || strings.Contains(sum, "died") {
			t.Errorf("ShardsSum(%q) = %q", detail, sum)
		}
	})
	t.Run("no result, no output", func(t *testing.T) {
		outs := []ShardOutput{{Index: 0, Pod: "p0", Log: []byte("panic: boom\ngoroutine 1 [running]:\n")}, {Index: 7, Pod: "stray"}}
		fates, rs := CollectShards(outs, 2, t0)
		if len(rs) != 0 || !strings.Contains(fates[0].Why, "holds no result; it ends: goroutine 1 [running]:") ||
			!strings.Contains(fates[1].Why, "no output") {
			t.Errorf("fates %+v", fates)
		}
	})
	t.Run("an idle shard counts as reported", func(t *testing.T) {
		two := resultOf(t, shardMetrics(t, t0, 3*time.Second, sample(5, 10, 0, time.Second)), 0, 2)
		outs := []ShardOutput{{Index: 0, Log: framed(t, two)}, {Index: 1, Log: framed(t, IdleShardResult(1, 2, t0))}}
		fates, rs := CollectShards(outs, 2, t0)
		if fates[0].State != ShardOK || fates[1].State != ShardIdle || len(rs) != 2 {
			t.Errorf("fates %+v", fates)
		}
		if ok, detail := JudgeShards(fates, MergeShards(t0, rs)); !ok {
			t.Errorf("idle shard judged: %s", detail)
		}
		// a result of shard 0 of 3 in a 2-shard load is bad
		if fates, _ := CollectShards([]ShardOutput{{Index: 0, Log: framed(t, res(0, 1))}}, 2, t0); fates[0].State != ShardDead {
			t.Errorf("shard 0 of 3 accepted as shard 0 of 2: %+v", fates[0])
		}
	})
}
