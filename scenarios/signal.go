package scenarios

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/scaleproof/scaleproof/scenarios/observe"
)

// KindSignal is the results record of an hpa signal sample: the
// zone's query result, threshold and replicas over time. Readers that do
// not know it skip it.
const KindSignal = "signal"

// SignalRecord is one "signal" record: at T seconds from the scenario's
// start the query returned Signal (nil when it failed or returned nothing
// usable, Err says why); Threshold is the value per replica; Desired is
// clamp(ceil(signal ÷ threshold), min, max), what an HPA would ask for
// (before tolerance, stabilization and rate limits); Replicas, Ready and
// Max are the zone's last sample at that time.
type SignalRecord struct {
	Scenario  string    `json:"scenario"`
	Zone      string    `json:"zone"`
	Policy    string    `json:"policy"`
	T         float64   `json:"t"`
	At        time.Time `json:"at"`
	Query     string    `json:"query"`
	Signal    *float64  `json:"signal"`
	Err       string    `json:"err,omitempty"`
	Threshold float64   `json:"threshold"`
	Desired   int       `json:"desired"`
	Replicas  int       `json:"replicas"`
	Ready     int       `json:"ready"`
	Max       int       `json:"max_count"`
}

// promQuerier runs instant queries against the Prometheus of the run.
type promQuerier struct {
	api promv1.API
	tr  *http.Transport
}

func newPromQuerier(baseURL string) (*promQuerier, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	c, err := api.NewClient(api.Config{Address: strings.TrimRight(baseURL, "/"), RoundTripper: tr})
	if err != nil {
		return nil, fmt.Errorf("prometheus %q: %w", baseURL, err)
	}
	return &promQuerier{api: promv1.NewAPI(c), tr: tr}, nil
}

// sum runs query now and sums the series. No series is 0 when emptyZero,
// else an error; NaN or ±Inf likewise.
func (q *promQuerier) sum(ctx context.Context, query string, emptyZero bool) (float64, error) {
	v, _, _, err := q.api.Query(ctx, query, time.Now())
	if err != nil {
		return 0, err
	}
	var vals []float64
	switch r := v.(type) {
	case model.Vector:
		for _, s := range r {
			vals = append(vals, float64(s.Value))
		}
	case *model.Scalar:
		vals = []float64{float64(r.Value)}
	default:
		return 0, fmt.Errorf("result type %v, want a vector or a scalar", v.Type())
	}
	return SumSeries(vals, emptyZero)
}

// SumSeries is a query's reading from its series' values: their sum. No
// series reads 0 when emptyZero (KEDA's ignoreNullValues), else it is an
// error; a NaN or ±Inf value is skipped when emptyZero, else an error.
func SumSeries(vals []float64, emptyZero bool) (float64, error) {
	if len(vals) == 0 {
		if emptyZero {
			return 0, nil
		}
		return 0, errors.New("no series")
	}
	total := 0.0
	for _, x := range vals {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			if emptyZero {
				continue
			}
			return 0, fmt.Errorf("value %v", x)
		}
		total += x
	}
	return total, nil
}

func (q *promQuerier) close() { q.tr.CloseIdleConnections() }

// SignalPoint is one reading of a zone's signal (the value its query
// read at At); OK false when the reading failed.
type SignalPoint struct {
	At    time.Time
	Value float64
	OK    bool
}

// signalRecorder samples a zone's signal every interval, writes "signal"
// records and keeps the points for the judgement.
type signalRecorder struct {
	s         *Scope
	q         *promQuerier
	query     string
	threshold float64
	emptyZero bool
	min, max  int
	policy    string

	mu     sync.Mutex
	points []SignalPoint
}

// run samples until ctx ends.
func (r *signalRecorder) run(ctx context.Context, interval time.Duration) {
	observe.Every(ctx, interval, func() bool { r.sampleOnce(ctx); return true })
}

func (r *signalRecorder) sampleOnce(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	v, err := r.q.sum(qctx, r.query, r.emptyZero)
	cancel()
	if ctx.Err() != nil {
		return
	}
	now := time.Now()
	p := SignalPoint{At: now, Value: v, OK: err == nil}
	r.mu.Lock()
	r.points = append(r.points, p)
	r.mu.Unlock()
	var last observe.Sample
	if r.s.sampler != nil {
		last = r.s.sampler.Last()
	}
	rec := SignalRecord{Scenario: r.s.Name, Zone: r.s.Zone, Policy: r.policy, T: r.s.Since(now), At: now,
		Query: r.query, Threshold: r.threshold, Replicas: last.Count, Ready: last.Ready, Max: last.Max}
	if err != nil {
		rec.Err = err.Error()
	} else {
		rec.Signal = &v
		rec.Desired = clampInt(int(math.Ceil(v/r.threshold)), r.min, r.max)
	}
	r.s.env.write(KindSignal, rec)
}

func (r *signalRecorder) snapshot() []SignalPoint {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]SignalPoint(nil), r.points...)
}

func clampInt(v, lo, hi int) int { return min(max(v, lo), hi) }
