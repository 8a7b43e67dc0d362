package reports

import (
	"fmt"
	"strings"
)

// The imbalance rule: a second is imbalanced when one ready worker of the
// zone has at least ImbalanceHotShare of its in-flight limit in flight while
// another ready worker of the same zone has 0 in flight (the edge routes
// calls to one worker while another idles). A verdict flags imbalance when
// ImbalanceRunS or more imbalanced seconds come in a row. The flag is a
// warning shown with the verdict; it never fails a scenario.
const (
	ImbalanceHotShare = 0.8 // share of a worker's in-flight limit that makes it "hot"
	ImbalanceRunS     = 3   // imbalanced seconds in a row that raise the flag
)

// WorkerInFlight is one worker's in-flight calls and in-flight limit as
// read from its /metrics (scaleproof_worker_inflight, _inflight_limit).
// Limit 0 means the worker reported no limit (it can never be hot).
type WorkerInFlight struct {
	ID       string  `json:"id"`
	InFlight float64 `json:"inflight"`
	Limit    float64 `json:"limit,omitempty"`
}

// InFlightSecond is one read of every ready worker of a zone; T is seconds
// from the scenario's start. Two reads are consecutive seconds when their T
// differ by at most 1.5 s.
type InFlightSecond struct {
	T       float64          `json:"t"`
	Workers []WorkerInFlight `json:"workers"`
}

// Imbalance is how a zone's in-flight calls spread over its ready workers
// while the scenario's load ran (see the imbalance rule above).
type Imbalance struct {
	SampledS    int `json:"sampled_s"`     // seconds read
	ImbalancedS int `json:"imbalanced_s"`  // seconds imbalanced, in all
	LongestRunS int `json:"longest_run_s"` // most imbalanced seconds in a row
	// Worst is the imbalanced second whose hot worker was nearest its limit
	// (the first such); nil when no second was imbalanced.
	Worst *InFlightSecond `json:"worst,omitempty"`
}

// Flagged reports whether the verdict shows the imbalance warning:
// ImbalanceRunS or more imbalanced seconds in a row. Safe on nil.
func (im *Imbalance) Flagged() bool { return im != nil && im.LongestRunS >= ImbalanceRunS }

// hotIdle returns the hottest worker at or over ImbalanceHotShare of its
// limit and the first ready worker with 0 in flight; ok false when the
// second has no such pair.
func hotIdle(sec InFlightSecond) (hot, idle WorkerInFlight, share float64, ok bool) {
	hi, ii := -1, -1
	for i, w := range sec.Workers {
		if w.Limit > 0 && w.InFlight >= ImbalanceHotShare*w.Limit && w.InFlight/w.Limit > share {
			hi, share = i, w.InFlight/w.Limit
		}
	}
	for i, w := range sec.Workers {
		if i != hi && w.InFlight == 0 && ii < 0 {
			ii = i
		}
	}
	if hi < 0 || ii < 0 {
		return hot, idle, 0, false
	}
	return sec.Workers[hi], sec.Workers[ii], share, true
}

// JudgeImbalance applies the imbalance rule to the seconds read, in order.
// It returns nil when secs is empty (nothing was read: the platform cannot
// reach workers).
func JudgeImbalance(secs []InFlightSecond) *Imbalance {
	if len(secs) == 0 {
		return nil
	}
	im := &Imbalance{SampledS: len(secs)}
	run, worst := 0, 0.0
	for i, sec := range secs {
		_, _, share, ok := hotIdle(sec)
		if !ok {
			run = 0
			continue
		}
		im.ImbalancedS++
		if run > 0 && sec.T-secs[i-1].T <= 1.5 {
			run++
		} else {
			run = 1
		}
		im.LongestRunS = max(im.LongestRunS, run)
		if im.Worst == nil || share > worst {
			w := sec
			w.Workers = append([]WorkerInFlight(nil), sec.Workers...)
			im.Worst, worst = &w, share
		}
	}
	return im
}

// Warning is the flag's one line, "" when not Flagged: "imbalance: 5 s in a
// row with worker w2 at 32/32 in flight while w1 idled (...)".
func (im *Imbalance) Warning() string {
	if !im.Flagged() || im.Worst == nil {
		return ""
	}
	hot, idle, _, _ := hotIdle(*im.Worst)
	per := make([]string, len(im.Worst.Workers))
	for i, w := range im.Worst.Workers {
		per[i] = fmt.Sprintf("%s %.0f", w.ID, w.InFlight)
	}
	return fmt.Sprintf("imbalance: %d s in a row with worker %s at %.0f/%.0f in flight while %s idled "+
		"(%d of %d s sampled had a worker at ≥ %.0f %% of its in-flight limit while another ready worker had 0; in flight at t=%.0f s: %s)",
		im.LongestRunS, hot.ID, hot.InFlight, hot.Limit, idle.ID,
		im.ImbalancedS, im.SampledS, ImbalanceHotShare*100, im.Worst.T, strings.Join(per, ", "))
}
