package worker_test

import (
	"net/http/httptest"
	"testing"

	"github.com/scaleproof/scaleproof/autoscaler/worker"
)

// TestVersionOnMetrics: a worker's version is the version label of
// MetricInfo (1), "stable" unless told otherwise.
func TestVersionOnMetrics(t *testing.T) {
	for _, tc := range []struct{ version, want string }{{"", worker.DefaultVersion}, {"canary", "canary"}} {
		w := worker.New(worker.Config{ID: "w", Version: tc.version})
		ts := httptest.NewServer(w.Handler())
		mf := scrape(t, ts.Client(), ts.URL)
		ts.Close()
		ms := mf[worker.MetricInfo].GetMetric()
		if len(ms) != 1 || ms[0].GetGauge().GetValue() != 1 || len(ms[0].GetLabel()) != 1 ||
			ms[0].GetLabel()[0].GetName() != "version" || ms[0].GetLabel()[0].GetValue() != tc.want {
			t.Fatalf("version %q: %s = %v, want 1 with version=%q", tc.version, worker.MetricInfo, ms, tc.want)
		}
	}
}
