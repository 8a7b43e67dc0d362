package scenarios

import (
	"fmt"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/observe"
)

// KindAtMax is the results record of how long a scenario's zone sat at its
// max (AtMaxRecord). Readers that do not know it skip it.
const KindAtMax = "at_max"

// AtMaxRecord is the "at_max" record: the zone ran at its max_count for
// SecondsAtMax of the SampledS seconds it was sampled, the longest stretch
// LongestS. the "maxed out" alert of Grafana's post on autoscaling Loki queries with KEDA (autoscaler/deploy/prometheus/alerts.yaml)
// fires on the same fact once a stretch reaches 3 h.
type AtMaxRecord struct {
	Scenario     string  `json:"scenario"`
	Zone         string  `json:"zone"`
	MaxCount     int     `json:"max_count"`
	SecondsAtMax float64 `json:"seconds_at_max"`
	LongestS     float64 `json:"longest_s"`
	SampledS     float64 `json:"sampled_s"`
}

// AtMax computes how long the samples show the zone at its max: each
// sample's state (count == max_count) holds until the next good sample.
// Failed samples are skipped; the last sample adds nothing.
func AtMax(samples []observe.Sample) (total, longest, sampled time.Duration, maxCount int) {
	var prev *observe.Sample
	var run time.Duration
	for i := range samples {
		s := &samples[i]
		if s.Err != "" {
			continue
		}
		if prev != nil {
			d := s.At.Sub(prev.At)
			sampled += d
			if prev.Max > 0 && prev.Count >= prev.Max {
				total += d
				run += d
				longest = max(longest, run)
			} else {
				run = 0
			}
		}
		maxCount = max(maxCount, s.Max)
		prev = s
	}
	return total, longest, sampled, maxCount
}

// TimeAtMax is the informational fact "time at max" (it never fails a
// scenario) and the at_max record of the zone's samples, for every world;
// ok is false when there is no sample.
func TimeAtMax(scenario, zone string, samples []observe.Sample) (f reports.Fact, rec AtMaxRecord, ok bool) {
	if len(samples) == 0 {
		return f, rec, false
	}
	total, longest, sampled, maxCount := AtMax(samples)
	f = reports.Fact{Name: "time at max", Passed: true, Detail: fmt.Sprintf("%.1f s of %.1f s at max_count %d (longest stretch %.1f s); the maxed-out alert fires after 3h",
		total.Seconds(), sampled.Seconds(), maxCount, longest.Seconds())}
	rec = AtMaxRecord{Scenario: scenario, Zone: zone, MaxCount: maxCount,
		SecondsAtMax: round1(total.Seconds()), LongestS: round1(longest.Seconds()), SampledS: round1(sampled.Seconds())}
	return f, rec, true
}

// reportAtMax adds TimeAtMax's fact and writes its record.
func (s *Scope) reportAtMax() {
	if f, rec, ok := TimeAtMax(s.Name, s.Zone, s.Samples()); ok {
		record(s, f)
		s.env.write(KindAtMax, rec)
	}
}

// PeakCount is the highest count of the samples that did not fail.
func PeakCount(samples []observe.Sample) int {
	peak := 0
	for _, smp := range samples {
		if smp.Err == "" {
			peak = max(peak, smp.Count)
		}
	}
	return peak
}

// FactNoFiveXX is "no 5xx": none of the scenario's calls c answered 5xx;
// reasons, where the world keeps them, are the answers' most frequent
// reasons (reasonsText).
func FactNoFiveXX(c reports.Calls, reasons []load.ErrorCount) reports.Fact {
	return reports.Fact{Name: "no 5xx", Passed: c.Server5xx == 0, Detail: fmt.Sprintf("%d calls answered 5xx%s", c.Server5xx, reasonsText(reasons))}
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }
