package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/fleet"
)

// The worker metrics the controller reads (Ramen 0.7.5's autoscaling notes, "How it decides": each
// worker reports its in-flight calls, its in-flight limit and its total call
// count). The worker package exports the same names.
const (
	MetricInFlight      = "scaleproof_worker_inflight"       // gauge: calls in flight now
	MetricInFlightLimit = "scaleproof_worker_inflight_limit" // gauge: RAMEN_MAX_INFLIGHT
	MetricReady         = "scaleproof_worker_ready"          // gauge: 1 ready, 0 not
	MetricCallsTotal    = "scaleproof_worker_calls_total"    // counter: calls served since start
)

// ErrNoInflightLimit: a worker's /metrics has no in-flight limit gauge. The
// worker counts as down (never as capacity, never as low) and the decision's
// reason says so (DownNoInflightLimit).
var ErrNoInflightLimit = errors.New(MetricInFlightLimit + " missing")

// DownNoInflightLimit is the down reason of a worker whose /metrics lacks the
// in-flight limit.
const DownNoInflightLimit = "its /metrics has no in-flight limit (" + MetricInFlightLimit + ")"

// DefaultScrapeTimeout bounds one worker scrape.
const DefaultScrapeTimeout = 2 * time.Second

// maxMetricsBody caps what a scrape reads from a worker.
const maxMetricsBody = 4 << 20

// WorkerMetrics is what one worker's /metrics says.
type WorkerMetrics struct {
	InFlight   int
	Limit      int
	Ready      bool
	HasReady   bool // the ready gauge was present
	CallsTotal uint64
}

// ParseWorkerMetrics reads the Prometheus text exposition of a worker. The
// in-flight and limit gauges are required; the ready gauge and the calls
// counter are optional (ready then comes from discovery alone, calls are 0).
// Series of one family are summed (the ready gauge: any series > 0).
func ParseWorkerMetrics(r io.Reader) (WorkerMetrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return WorkerMetrics{}, fmt.Errorf("parse metrics: %w", err)
	}
	sums := map[string]float64{}
	for _, name := range []string{MetricInFlight, MetricInFlightLimit, MetricReady, MetricCallsTotal} {
		f, ok := fams[name]
		if !ok {
			continue
		}
		vec, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{Timestamp: model.Earliest}, f)
		if err != nil {
			return WorkerMetrics{}, fmt.Errorf("parse metrics: %s: %w", name, err)
		}
		for _, s := range vec {
			if v := float64(s.Value); !math.IsNaN(v) && string(s.Metric[model.MetricNameLabel]) == name {
				sums[name] += v
			}
		}
		if _, ok := sums[name]; !ok && len(vec) > 0 {
			sums[name] = 0
		}
	}
	var m WorkerMetrics
	in, ok := sums[MetricInFlight]
	if !ok {
		return WorkerMetrics{}, fmt.Errorf("parse metrics: %s missing", MetricInFlight)
	}
	limit, ok := sums[MetricInFlightLimit]
	if !ok {
		return WorkerMetrics{}, fmt.Errorf("parse metrics: %w", ErrNoInflightLimit)
	}
	m.InFlight, m.Limit = clampInt(in), clampInt(limit)
	if ready, ok := sums[MetricReady]; ok {
		m.HasReady, m.Ready = true, ready > 0
	}
	if calls := sums[MetricCallsTotal]; calls > 0 {
		if calls >= math.MaxUint64 {
			m.CallsTotal = math.MaxUint64
		} else {
			m.CallsTotal = uint64(calls)
		}
	}
	return m, nil
}

func clampInt(v float64) int {
	switch {
	case v <= 0 || math.IsNaN(v):
		return 0
	case v >= math.MaxInt32:
		return math.MaxInt32
	}
	return int(v)
}

// HTTPScraper scrapes http://ADDR/metrics with a timeout.
type HTTPScraper struct {
	client  *http.Client
	timeout time.Duration
}

var _ Scraper = (*HTTPScraper)(nil)

// NewHTTPScraper returns a scraper; timeout <= 0 means DefaultScrapeTimeout.
func NewHTTPScraper(timeout time.Duration) *HTTPScraper {
	if timeout <= 0 {
		timeout = DefaultScrapeTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 4
	return &HTTPScraper{client: &http.Client{Transport: tr, Timeout: timeout}, timeout: timeout}
}

// Scrape reads ep's metrics. The sample is Reachable when the scrape worked;
// Ready needs both the endpoint's readiness and the worker's ready gauge
// (when it reports one).
func (s *HTTPScraper) Scrape(ctx context.Context, ep fleet.Endpoint) (autoscaler.WorkerSample, error) {
	w := autoscaler.WorkerSample{ID: ep.ID, Created: ep.Created}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ep.Addr+"/metrics", nil)
	if err != nil {
		return w, fmt.Errorf("scrape %s (%s): %w", ep.ID, ep.Addr, err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.client.Do(req)
	if err != nil {
		return w, fmt.Errorf("scrape %s (%s): %w", ep.ID, ep.Addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return w, fmt.Errorf("scrape %s (%s): HTTP %d", ep.ID, ep.Addr, resp.StatusCode)
	}
	m, err := ParseWorkerMetrics(io.LimitReader(resp.Body, maxMetricsBody))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w (timeout %s)", err, s.timeout)
		}
		return w, fmt.Errorf("scrape %s (%s): %w", ep.ID, ep.Addr, err)
	}
	w.Reachable = true
	w.Ready = ep.Ready && (!m.HasReady || m.Ready)
	w.InFlight, w.Limit, w.CallsTotal = m.InFlight, m.Limit, m.CallsTotal
	return w, nil
}
