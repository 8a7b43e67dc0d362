package sim

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
)

// signal is an hpa zone's metric as the local platform produces it: the
// edge observes the zone's calls in flight (queued + running, the call
// itself included) at each call's start and end into a summary whose
// quantiles cover the last maxAge in ageBuckets rotating buckets (the
// client_golang summary: 1 min, 6 buckets); Prometheus scrapes its 0.75
// quantile every scrape interval; the query sum(max_over_time(...[window]))
// reads the largest scraped value of the last window. A summary with no
// observation in its window reads NaN. Loop only.
type signal struct {
	width  time.Duration // maxAge / ageBuckets
	ids    [ageBuckets]int64
	hist   [ageBuckets][]int64 // observation counts by in-flight value
	window time.Duration
	points []point // scraped values, oldest first, within window
}

const ageBuckets = 6

type point struct {
	at time.Duration
	v  float64
}

func newSignal(maxAge, window time.Duration) *signal {
	s := &signal{width: max(maxAge/ageBuckets, time.Millisecond), window: window}
	for i := range s.ids {
		s.ids[i] = -1
	}
	return s
}

func (s *signal) observe(now time.Duration, v int) {
	b := int64(now / s.width)
	i := b % ageBuckets
	if s.ids[i] != b {
		s.ids[i] = b
		s.hist[i] = s.hist[i][:0]
	}
	for len(s.hist[i]) <= v {
		s.hist[i] = append(s.hist[i], 0)
	}
	s.hist[i][v]++
}

// p75 is the summary's 0.75 quantile now (nearest rank), NaN when empty.
func (s *signal) p75(now time.Duration) float64 {
	cur := int64(now / s.width)
	var n int64
	var counts []int64
	for i := range ageBuckets {
		if s.ids[i] > cur-ageBuckets && s.ids[i] <= cur {
			for v, c := range s.hist[i] {
				for len(counts) <= v {
					counts = append(counts, 0)
				}
				counts[v] += c
				n += c
			}
		}
	}
	if n == 0 {
		return math.NaN()
	}
	rank := int64(math.Ceil(0.75 * float64(n)))
	var cum int64
	for v, c := range counts {
		cum += c
		if cum >= rank {
			return float64(v)
		}
	}
	return float64(len(counts) - 1)
}

// scrape records the quantile now, as Prometheus scraping the edge.
func (s *signal) scrape(now time.Duration) {
	s.points = append(s.points, point{now, s.p75(now)})
	i := 0
	for i < len(s.points) && s.points[i].at < now-s.window {
		i++
	}
	s.points = s.points[i:]
}

// query is max_over_time over the window: no scrape in it is no series; all
// NaN is NaN.
func (s *signal) query(now time.Duration) []float64 {
	out, seen := math.NaN(), false
	for _, p := range s.points {
		if p.at < now-s.window || p.at > now {
			continue
		}
		seen = true
		if !math.IsNaN(p.v) && (math.IsNaN(out) || p.v > out) {
			out = p.v
		}
	}
	if !seen {
		return nil
	}
	return []float64{out}
}

// metrics answers the controller's hpa queries from the zones' signals: a
// query names its zone with zone="<name>" (the harness's query does).
type metrics struct{ s *Sim }

var _ controller.MetricSource = metrics{}

var zoneLabel = regexp.MustCompile(`zone="([^"]+)"`)

func (m metrics) Query(_ context.Context, q string) ([]float64, error) {
	sub := zoneLabel.FindStringSubmatch(q)
	if sub == nil {
		return nil, fmt.Errorf("sim: query %q names no zone=\"...\"", q)
	}
	m.s.pf.mu.RLock()
	z := m.s.pf.byName[sub[1]]
	m.s.pf.mu.RUnlock()
	if z == nil || z.signal == nil {
		return nil, nil
	}
	return z.signal.query(m.s.l.since()), nil
}
