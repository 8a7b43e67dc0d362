//go:build e2e

package e2e

import (
	"log/slog"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
)

var _ = Describe("the five-scenario load test", Ordered, func() {
	var w *reports.Writer
	BeforeAll(func() {
		var err error
		w, err = reports.Create(filepath.Join(artifacts, "results_e2e.jsonl"), reports.RunMeta{RunID: runID, Platform: "kind", Profile: prof.Name})
		Expect(err).NotTo(HaveOccurred())
	})
	for _, sc := range scenarios.All() {
		It(sc.Name+": every fact holds", func(ctx SpecContext) {
			env := scenarios.NewEnv(ep, prof, w, slog.New(slog.NewTextHandler(GinkgoWriter, nil)))
			// the platform's fault actions: its workers' listing, whose
			// /metrics the back-pressure fact and the step rounds' worker
			// reads read through the API server's proxy to each pod
			env.Faults = pf
			vs := env.Run(ctx, []scenarios.Scenario{sc}) // Run turns the scheduler on first, as `scaleproof run` does
			Expect(vs).To(HaveLen(1))
			v := vs[0]
			Expect(v.Error).To(BeEmpty())
			for _, f := range v.Facts {
				// A not-applicable fact (e.g. the max-1 load's 429s where the
				// canary's slots take it) is neither.
				Expect(f.Failed()).To(BeFalse(), "%s: %s", f.Name, f.Detail)
			}
			Expect(v.Passed).To(BeTrue())
			Expect(v.Calls.Server5xx).To(BeZero())
			GinkgoWriter.Printf("%s: %.1f s, up to max %.1f s, back to 1 %.1f s, ok %d, 429 %d\n",
				sc.Name, v.DurationS, v.UpToMaxS, v.BackTo1S, v.Calls.OK, v.Calls.TooMany)
		}, SpecTimeout(prof.UpTimeout+prof.DownTimeout+2*prof.GracefulStop))
	}
})
