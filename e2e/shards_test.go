//go:build e2e

package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	loadengine "github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// The distributed load's good path (every scenario's load over 3 pods,
// merged, judged) is in `make e2e`'s run (--load-shards 3). This spec
// checks the bad path on a real cluster: shards whose pods fail are each
// reported dead, with the pod, the cluster's reason and the end of the
// pod's log, never dropped; the Job runs in the system's namespace with
// the image the kind platform loaded (it must hold /scaleproof).
var _ = Describe("a distributed load on Kubernetes", func() {
	It("reports every shard whose pod fails, with why", func(ctx SpecContext) {
		outs, err := pf.RunLoadShards(ctx, platform.ShardJob{Name: "load-e2e-bad-" + runID, Shards: 3,
			Args: []string{"--spec={\"shards\":3}"}, Timeout: 2 * time.Minute})
		Expect(err).NotTo(HaveOccurred())
		raw := make([]loadengine.ShardOutput, len(outs))
		for i, o := range outs {
			raw[i] = loadengine.ShardOutput{Index: o.Index, Pod: o.Pod, Log: o.Log, Failure: o.Failure}
		}
		fates, results := loadengine.CollectShards(raw, 3, time.Now())
		Expect(results).To(BeEmpty())
		for _, f := range fates {
			GinkgoWriter.Printf("shard %d: %s %s\n", f.Index, f.State, f.Why)
			Expect(f.State).To(Equal(loadengine.ShardDead))
			Expect(f.Pod).NotTo(BeEmpty())
			Expect(f.Why).To(ContainSubstring("failed: Error (exit code 2)"))
			Expect(f.Why).To(ContainSubstring("shard spec")) // the end of the pod's log: what load-shard said
		}
		ok, detail := loadengine.JudgeShards(fates, loadengine.MergeShards(time.Now(), nil))
		Expect(ok).To(BeFalse())
		Expect(detail).To(ContainSubstring("0 of 3 shards reported"))
	}, SpecTimeout(3*time.Minute))
})
