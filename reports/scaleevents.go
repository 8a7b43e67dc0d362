package reports

// CountSample is what ScaleEvents needs of one sample of a zone: its time in
// seconds from the scenario's start, the count and ready workers it showed,
// the reason to give a change first seen in it, and whether the sample failed
// (a failed sample's numbers are the last known and are skipped).
type CountSample struct {
	T      float64
	Count  int
	Ready  int
	Reason string
	Failed bool
}

// ScaleEvents derives a scenario's scale events from its consecutive samples,
// the one rule the harness and the simulator share: the decision time is the
// first sample with the new count; ready is the first later sample whose
// ready workers reached it (while the count stays); served is the first whole
// second after ready in which a call was answered ok. okSeconds are the
// seconds (from the scenario's start, ascending) with at least one ok call.
// ReadyS and ServedS are -1 when not reached.
func ScaleEvents(scenario string, samples []CountSample, okSeconds []float64) []ScaleEvent {
	var out []ScaleEvent
	prev := -1
	for i, smp := range samples {
		if smp.Failed {
			continue
		}
		if prev >= 0 && smp.Count != prev {
			ev := ScaleEvent{Scenario: scenario, From: prev, To: smp.Count, DecisionS: smp.T, ReadyS: -1, ServedS: -1, Reason: smp.Reason}
			for _, later := range samples[i:] {
				if !later.Failed && later.Count == smp.Count && later.Ready == smp.Count {
					ev.ReadyS = later.T
					break
				}
				if later.Count != smp.Count {
					break
				}
			}
			if ev.ReadyS >= 0 {
				for _, t := range okSeconds {
					if t+1 >= ev.ReadyS {
						ev.ServedS = t + 1
						break
					}
				}
			}
			out = append(out, ev)
		}
		prev = smp.Count
	}
	return out
}
