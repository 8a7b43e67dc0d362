package scenarios

import (
	"testing"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// TestFiveSampleFacts: the sample facts the platform runs and the
// simulator share judge only the readings that did not fail.
func TestFiveSampleFacts(t *testing.T) {
	smp := func(count int, err string) target.Sample { return target.Sample{Count: count, Err: err} }
	for _, c := range []struct {
		name              string
		samples           []target.Sample
		alwaysOne, within bool // FactCountAlwaysOne, FactCountWithin(…, 3)
		left              bool // FactNeverLeftOne's left (and FactScaledUnderSpikes: a peak of at least 2)
	}{
		{"held at 1", []target.Sample{smp(1, ""), smp(1, "")}, true, true, false},
		{"a failed reading is not judged", []target.Sample{smp(1, ""), smp(5, "HTTP 502"), smp(1, "")}, true, true, false},
		{"up to 3 and back", []target.Sample{smp(1, ""), smp(3, ""), smp(1, "")}, false, true, true},
		{"over max", []target.Sample{smp(1, ""), smp(4, "")}, false, false, true},
		{"below min", []target.Sample{smp(0, "")}, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if f := FactCountAlwaysOne(c.samples); f.Passed != c.alwaysOne {
				t.Errorf("FactCountAlwaysOne = %+v, want passed %v", f, c.alwaysOne)
			}
			if f := FactCountWithin(c.samples, 3); f.Passed != c.within || f.Name != "count within 1..3 at every sample" {
				t.Errorf("FactCountWithin = %+v, want passed %v", f, c.within)
			}
			if f := FactScaledUnderSpikes(c.samples); f.Passed != c.left {
				t.Errorf("FactScaledUnderSpikes = %+v, want passed %v", f, c.left)
			}
			f, left := FactNeverLeftOne(c.samples)
			if left != c.left || (!left && (!f.Passed || f.Name != "count back to 1 after the load")) || (left && f.Name != "") {
				t.Errorf("FactNeverLeftOne = %+v, %v, want left %v", f, left, c.left)
			}
		})
	}
}

// TestFactRefusedAtMaxOne: "429 > 0" is judged unless a canary is deployed
// and the VUs fit count 1 and the canary (2 × the in-flight limit).
func TestFactRefusedAtMaxOne(t *testing.T) {
	p := Quick()
	for _, c := range []struct {
		name    string
		canary  bool
		vus     int
		refused int64
		judged  bool
		passed  bool
	}{
		{"no canary, refused", false, 64, 10, true, true},
		{"no canary, none refused", false, 64, 0, true, false},
		{"a canary the VUs fit", true, 2 * p.MaxInflight, 0, false, false},
		{"a canary the VUs overflow", true, 2*p.MaxInflight + 1, 0, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := p
			q.VUs = c.vus
			f, judged := FactRefusedAtMaxOne(reports.Calls{TooMany: c.refused}, c.canary, q)
			if judged != c.judged || f.Passed != c.passed {
				t.Errorf("FactRefusedAtMaxOne = %+v, %v, want judged %v passed %v", f, judged, c.judged, c.passed)
			}
		})
	}
}
