package console

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
)

// workerView is one live worker as the pages show it. Every page renders it
// through the one "worker" template (web_templates/layout.html), so what a
// worker shows (a role badge, another figure) is added in one place.
type workerView struct {
	ID string
	// Name is ID without the "group-zone-" prefix platforms give their
	// workers (the row already names the zone); ID when it has none.
	Name            string
	InFlight, Limit int
	// Rate is calls per second since this console's previous look at the
	// worker ("—" until there are two samples).
	Rate string
	// State is ready, starting, not ready or down (did not answer).
	State string
	Ready bool
	// Load is low, mid or high: in flight against the limit (the step
	// policy's 30 % and 80 %), for the bar's colour.
	Load string
	// Canary marks a canary worker (another version beside the stable ones;
	// it counts as capacity). The "worker" template shows a badge for it.
	Canary bool
}

// newWorkerView is the view of one sample; rate is "—" or calls/s.
func newWorkerView(s autoscaler.WorkerSample, rate string) workerView {
	v := workerView{ID: s.ID, Name: s.ID, InFlight: s.InFlight, Limit: s.Limit, Rate: rate, Ready: s.Reachable && s.Ready && s.Limit > 0, Canary: s.Canary}
	switch {
	case v.Ready:
		v.State = "ready"
	case s.Starting:
		v.State = "starting"
	case s.Reachable:
		v.State = "not ready"
	default:
		v.State = "down (no answer)"
	}
	v.Load = "low"
	if s.Limit > 0 {
		switch f := float64(s.InFlight) / float64(s.Limit); {
		case f > 0.8:
			v.Load = "high"
		case f >= 0.3:
			v.Load = "mid"
		}
	}
	return v
}

// rateBook keeps each worker's previous call count, so the pages can show
// calls per second (as the console's policy does with its own samples).
type rateBook struct {
	mu sync.Mutex
	m  map[string]rateEntry
}

// rateEntry is a worker's latest sample (cur) and the latest one taken at
// an earlier instant (base): the rate is between the two, so two pages
// looking at the same instant see the same rate.
type rateEntry struct {
	curCalls, baseCalls uint64
	curAt, baseAt       time.Time
	hasBase             bool
}

// maxRateEntries bounds the book; past it, entries older than rateMaxAge go.
const (
	maxRateEntries = 10000
	rateMaxAge     = 10 * time.Minute
)

func newRateBook() *rateBook { return &rateBook{m: map[string]rateEntry{}} }

// views turns a zone's samples into views with their rates.
func (b *rateBook) views(group, zone string, ws []autoscaler.WorkerSample, now time.Time) []workerView {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]workerView, 0, len(ws))
	for _, w := range ws {
		k := group + "\x00" + zone + "\x00" + w.ID
		prev, had := b.m[k]
		rate := "—"
		if w.Reachable {
			e := rateEntry{curCalls: w.CallsTotal, curAt: w.SampledAt}
			switch {
			case had && w.SampledAt.After(prev.curAt):
				e.baseCalls, e.baseAt, e.hasBase = prev.curCalls, prev.curAt, true
			case had && w.SampledAt.Equal(prev.curAt):
				e.baseCalls, e.baseAt, e.hasBase = prev.baseCalls, prev.baseAt, prev.hasBase
			}
			b.m[k] = e
			if e.hasBase && e.curAt.After(e.baseAt) && e.curCalls >= e.baseCalls {
				rate = fmt.Sprintf("%.1f", float64(e.curCalls-e.baseCalls)/e.curAt.Sub(e.baseAt).Seconds())
			}
		}
		v := newWorkerView(w, rate)
		v.Name = shortWorkerName(w.ID, group, zone)
		out = append(out, v)
	}
	if len(b.m) > maxRateEntries {
		for k, e := range b.m {
			if now.Sub(e.curAt) > rateMaxAge {
				delete(b.m, k)
			}
		}
		if len(b.m) > maxRateEntries {
			clear(b.m)
		}
	}
	return out
}

// LowMark and HighMark are the meter's low and high marks: the step
// policy's low (30 %) and high (80 %) shares of the limit.
func (v workerView) LowMark() float64  { return 0.3 * float64(v.Limit) }
func (v workerView) HighMark() float64 { return 0.8 * float64(v.Limit) }

// shortWorkerName is a worker's ID without its zone's prefix, which every
// row of the zone repeats: "<group>-<zone>-" on local ("w1"), and the
// Deployment's "worker-<group>-<zone>-" on Kubernetes ("6f6dc45966-hbmkg",
// "canary-6f6dc45966-hbmkg"). An ID that is all prefix stays whole.
func shortWorkerName(id, group, zone string) string {
	for _, p := range []string{"worker-" + group + "-" + zone + "-", group + "-" + zone + "-"} {
		if n, ok := strings.CutPrefix(id, p); ok && n != "" {
			return n
		}
	}
	return id
}
