package scenarios

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/reports"
)

func TestEdgeAnswersOfOneZone(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `# TYPE scaleproof_edge_worker_answers_total counter
scaleproof_edge_worker_answers_total{code="200",group="g",track="canary",zone="a"} 30
scaleproof_edge_worker_answers_total{code="200",group="g",track="stable",zone="a"} 90
scaleproof_edge_worker_answers_total{code="429",group="g",track="canary",zone="a"} 4
scaleproof_edge_worker_answers_total{code="200",group="g",track="canary",zone="b"} 1000
`)
	}))
	defer srv.Close()
	ans, err := edgeAnswers(context.Background(), srv.Client(), srv.URL, "g", "a")
	if err != nil {
		t.Fatal(err)
	}
	var ok, canary, refused int64
	for _, a := range ans {
		switch {
		case a.code == 200:
			ok += a.n
			if a.track == trackCanary {
				canary += a.n
			}
		case a.code == 429:
			refused += a.n
		}
	}
	if len(ans) != 3 || ok != 120 || canary != 30 || refused != 4 {
		t.Fatalf("answers %+v: want zone a only, 120 ok of which 30 the canary's, 4 refused", ans)
	}

	noMetric := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "# TYPE other counter\nother 1\n")
	}))
	defer noMetric.Close()
	if _, err := edgeAnswers(context.Background(), noMetric.Client(), noMetric.URL, "g", "a"); err == nil ||
		!strings.Contains(err.Error(), metricEdgeAnswers) {
		t.Fatalf("an edge without the counter: %v, want an error naming it", err)
	}
}

func TestFactCanaryTookCalls(t *testing.T) {
	for _, tc := range []struct {
		name   string
		c      *reports.Canary
		nilFac bool
		passed bool
		detail string
	}{
		{name: "no canary", c: nil, nilFac: true},
		{name: "no calls", c: &reports.Canary{Workers: []string{"c1"}}, nilFac: true},
		{name: "a share", c: &reports.Canary{Workers: []string{"g-a-canary3"}, Calls: 1204, Total: 3010, Share: 0.4, Refused: 7},
			passed: true, detail: "the canary (g-a-canary3) took 1204 of 3010 calls (40.0 %) and refused 7 at its in-flight limit (429)"},
		{name: "none to the canary", c: &reports.Canary{Calls: 0, Total: 500}, passed: false, detail: "the canary took 0 of 500 calls (0.0 %)"},
		{name: "unreadable", c: &reports.Canary{Err: "edge /metrics: HTTP 500"}, passed: false, detail: "HTTP 500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := FactCanaryTookCalls(tc.c)
			if tc.nilFac {
				if f != nil {
					t.Fatalf("fact %+v, want none", f)
				}
				return
			}
			if f == nil || f.Passed != tc.passed || !strings.Contains(f.Detail, tc.detail) {
				t.Fatalf("fact %+v, want passed %v with %q", f, tc.passed, tc.detail)
			}
		})
	}
}
