package scenarios

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// The edge's count of the calls each track of workers answered (the
// reference edge's /metrics; platform.Endpoints.Canary says it is there).
const (
	metricEdgeAnswers = "scaleproof_edge_worker_answers_total"
	trackCanary       = "canary"
)

// canaryShare reads the canary's share of the calls the zone's workers
// answered, from the edge's answers by track (2xx for the share, 429 for
// refused) and the canary's name from the console's workers list. It never
// fails: a read that does not work is recorded in Err.
func (s *Scope) canaryShare(ctx context.Context) *reports.Canary {
	c := &reports.Canary{Workers: []string{}}
	e := s.env
	if z, st, err := e.Console.GetZone(ctx, s.admin(), e.Endpoints.Group, s.Zone); err == nil && st == http.StatusOK {
		for _, w := range z.Workers {
			if w.Canary && !slices.Contains(c.Workers, w.ID) {
				c.Workers = append(c.Workers, w.ID)
			}
		}
	}
	ans, err := edgeAnswers(ctx, e.HTTP, e.Endpoints.EdgeURL, e.Endpoints.Group, s.Zone)
	if err != nil {
		c.Err = err.Error()
		return c
	}
	for _, a := range ans {
		switch {
		case a.code/100 == 2:
			c.Total += a.n
			if a.track == trackCanary {
				c.Calls += a.n
			}
		case a.code == http.StatusTooManyRequests && a.track == trackCanary:
			c.Refused += a.n
		}
	}
	if c.Total > 0 {
		c.Share = float64(c.Calls) / float64(c.Total)
	}
	return c
}

// FactCanaryTookCalls: the canary takes calls from the edge like any
// worker (Ramen 0.7.5's autoscaling notes: "The canary counts as
// capacity"), so under load it answers some of them; the detail records its
// share, "the canary took N of M calls (x %)". Nil when the zone's workers
// answered no call (nothing to share).
func FactCanaryTookCalls(c *reports.Canary) *reports.Fact {
	if c == nil {
		return nil
	}
	if c.Err != "" {
		return fact("the canary took calls like any worker", false, "its share could not be read: %s", c.Err)
	}
	if c.Total == 0 {
		return nil
	}
	who := "the canary"
	if len(c.Workers) > 0 {
		who += " (" + strings.Join(c.Workers, ", ") + ")"
	}
	detail := fmt.Sprintf("%s took %d of %d calls (%.1f %%)", who, c.Calls, c.Total, 100*c.Share)
	if c.Refused > 0 {
		detail += fmt.Sprintf(" and refused %d at its in-flight limit (429)", c.Refused)
	}
	return fact("the canary took calls like any worker", c.Calls > 0, "%s; calls answered 2xx, counted by the edge", detail)
}

// edgeAnswer is one series of the edge's answers counter for a zone.
type edgeAnswer struct {
	track string
	code  int
	n     int64
}

// edgeAnswers reads the edge's answers by track and code for group × zone.
func edgeAnswers(ctx context.Context, hc *http.Client, edgeURL, group, zone string) ([]edgeAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(edgeURL, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("edge /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("edge /metrics: HTTP %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("edge /metrics: %w", err)
	}
	f, ok := fams[metricEdgeAnswers]
	if !ok {
		return nil, fmt.Errorf("edge /metrics has no %s (an edge without canary support?)", metricEdgeAnswers)
	}
	var out []edgeAnswer
	for _, m := range f.GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["group"] != group || l["zone"] != zone {
			continue
		}
		var code int
		if _, err := fmt.Sscanf(l["code"], "%d", &code); err != nil {
			continue
		}
		out = append(out, edgeAnswer{track: l["track"], code: code, n: int64(m.GetCounter().GetValue())})
	}
	return out, nil
}

// countWorkers is ws without the canary: the workers the count asks for.
func countWorkers(ws []platform.Worker) []platform.Worker {
	return slices.DeleteFunc(slices.Clone(ws), func(w platform.Worker) bool { return w.Canary })
}
