package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/reports"
)

// secs builds one read per second from t=1: each row is the in-flight of
// workers w1, w2, ... with an in-flight limit of 32 each.
func secs(rows ...[]float64) []reports.InFlightSecond {
	out := make([]reports.InFlightSecond, len(rows))
	for i, r := range rows {
		sec := reports.InFlightSecond{T: float64(i + 1)}
		for j, n := range r {
			sec.Workers = append(sec.Workers, reports.WorkerInFlight{ID: "w" + string(rune('1'+j)), InFlight: n, Limit: 32})
		}
		out[i] = sec
	}
	return out
}

// TestJudgeImbalance: the imbalance rule, one worker at ≥ 80 % of its
// in-flight limit while another ready worker has 0, 3 s in a row flags.
func TestJudgeImbalance(t *testing.T) {
	hotIdle := []float64{0, 32}
	cases := []struct {
		name                    string
		in                      []reports.InFlightSecond
		sampled, imbal, longest int
		flagged                 bool
		warn                    string // a substring of the warning ("" when none)
	}{
		{"nothing read", nil, 0, 0, 0, false, ""},
		{"balanced", secs([]float64{16, 16}, []float64{30, 28}, []float64{26, 1}, []float64{0, 0}), 4, 0, 0, false, ""},
		{"one hot, one idle for 3 s", secs([]float64{8, 8}, hotIdle, hotIdle, []float64{0, 26}, []float64{8, 8}), 5, 3, 3, true,
			"imbalance: 3 s in a row with worker w2 at 32/32 in flight while w1 idled"},
		{"2 s only, twice", secs(hotIdle, hotIdle, []float64{4, 4}, hotIdle, hotIdle), 5, 4, 2, false, ""},
		{"hot just under 80 %", secs([]float64{0, 25}, []float64{0, 25}, []float64{0, 25}), 3, 0, 0, false, ""},
		{"single worker", secs([]float64{32}, []float64{32}, []float64{32}, []float64{32}), 4, 0, 0, false, ""},
		{"three workers, the third idles", secs([]float64{12, 30, 0}, []float64{12, 30, 0}, []float64{12, 30, 0}), 3, 3, 3, true,
			"worker w2 at 30/32 in flight while w3 idled"},
	}
	gap := secs(hotIdle, hotIdle, hotIdle)
	gap[2].T = 10 // a read missed between t=2 and t=10: not in a row
	cases = append(cases, struct {
		name                    string
		in                      []reports.InFlightSecond
		sampled, imbal, longest int
		flagged                 bool
		warn                    string
	}{"a gap breaks the run", gap, 3, 3, 2, false, ""})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			im := reports.JudgeImbalance(c.in)
			if c.in == nil {
				if im != nil || im.Flagged() || im.Warning() != "" {
					t.Fatalf("nothing read: %+v", im)
				}
				return
			}
			if im.SampledS != c.sampled || im.ImbalancedS != c.imbal || im.LongestRunS != c.longest {
				t.Errorf("sampled %d, imbalanced %d, longest %d; want %d, %d, %d",
					im.SampledS, im.ImbalancedS, im.LongestRunS, c.sampled, c.imbal, c.longest)
			}
			if im.Flagged() != c.flagged {
				t.Errorf("flagged %v, want %v", im.Flagged(), c.flagged)
			}
			w := im.Warning()
			if c.warn == "" && w != "" || c.warn != "" && !strings.Contains(w, c.warn) {
				t.Errorf("warning %q, want it to contain %q", w, c.warn)
			}
			if (c.imbal > 0) != (im.Worst != nil) {
				t.Errorf("worst %+v with %d imbalanced seconds", im.Worst, c.imbal)
			}
		})
	}
}

// TestImbalanceRendered: a flagged imbalance shows in the PASS/FAIL lines,
// the Markdown and the HTML report, and does not fail the scenario.
func TestImbalanceRendered(t *testing.T) {
	hot := []float64{0, 32}
	im := reports.JudgeImbalance(secs(hot, hot, hot, hot, hot))
	want := "imbalance: 5 s in a row with worker w2 at 32/32 in flight while w1 idled"
	res := mustRead(t, "testdata/small.jsonl")
	if len(res.Verdicts) == 0 {
		t.Fatal("testdata/small.jsonl has no verdict")
	}
	res.Verdicts[0].Imbalance = im
	passed := res.Verdicts[0].Passed

	var lines bytes.Buffer
	WriteVerdicts(&lines, res.Verdicts)
	if !strings.Contains(lines.String(), "      warning: "+want) {
		t.Errorf("PASS/FAIL lines lack the warning:\n%s", lines.String())
	}
	for _, format := range []string{"markdown", "html"} {
		var b bytes.Buffer
		if err := Render(&b, format, []*reports.Results{res}, Options{Columns: AllColumns()}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "Warning: "+want) {
			t.Errorf("%s lacks the warning", format)
		}
	}
	if res.Verdicts[0].Passed != passed {
		t.Error("the flag changed the verdict")
	}

	// Not flagged (2 s in a row): no warning anywhere.
	res.Verdicts[0].Imbalance = reports.JudgeImbalance(secs(hot, hot))
	lines.Reset()
	WriteVerdicts(&lines, res.Verdicts)
	if strings.Contains(lines.String(), "imbalance") {
		t.Errorf("an unflagged imbalance shows:\n%s", lines.String())
	}
}
