package render

import (
	"math"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/reports"
)

func TestFlaps(t *testing.T) {
	ev := func(sc string, from, to int) reports.ScaleEvent {
		return reports.ScaleEvent{Scenario: sc, From: from, To: to}
	}
	cases := []struct {
		name string
		evs  []reports.ScaleEvent
		want int
	}{
		{"none", nil, 0},
		{"up then down", []reports.ScaleEvent{ev("a", 1, 3), ev("a", 3, 2), ev("a", 2, 1)}, 0},
		{"down then up again", []reports.ScaleEvent{ev("a", 1, 3), ev("a", 3, 2), ev("a", 2, 3), ev("a", 3, 1)}, 1},
		{"per scenario", []reports.ScaleEvent{ev("a", 3, 1), ev("b", 1, 3)}, 0},
		{"twice", []reports.ScaleEvent{ev("a", 3, 2), ev("a", 2, 3), ev("a", 3, 2), ev("a", 2, 3)}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := reports.Flaps(c.evs); got != c.want {
				t.Errorf("Flaps = %d, want %d", got, c.want)
			}
		})
	}
}

func TestViews(t *testing.T) {
	res := mustRead(t, "testdata/small.jsonl")
	views := res.Views()
	if len(views) != 3 {
		t.Fatalf("%d views, want 3", len(views))
	}
	cases := []struct {
		name                             string
		status                           string
		samples, seconds, events, readyz int
		duration                         float64
	}{
		{"viewer-refused", "PASS", 2, 0, 0, 0, 1.5},
		{"sustained", "PASS", 22, 9, 3, 0, 20.5},
		{"burst", "FAIL", 19, 4, 4, 1, 18.2},
	}
	for i, c := range cases {
		v := views[i]
		if v.Name != c.name || v.Status() != c.status || len(v.Samples) != c.samples || len(v.Seconds) != c.seconds ||
			len(v.Events) != c.events || len(v.Readyz) != c.readyz || math.Abs(v.DurationS()-c.duration) > 1e-9 {
			t.Errorf("view %d: %s %s samples %d seconds %d events %d readyz %d duration %v, want %+v",
				i, v.Name, v.Status(), len(v.Samples), len(v.Seconds), len(v.Events), len(v.Readyz), v.DurationS(), c)
		}
	}
	// A scenario cut by a killed run: no verdict, its length from its data.
	res.Verdicts = res.Verdicts[:2]
	b := res.Views()[2]
	if b.Verdict != nil || b.Status() != "NO VERDICT" || b.DurationS() != 18 {
		t.Errorf("burst without verdict: status %s duration %v", b.Status(), b.DurationS())
	}
	// Interrupted: STOP everywhere (the terminal's verdict lines say STOP).
	stopped := reports.ScenarioView{Verdict: &reports.Verdict{Scenario: "burst", Interrupted: true}}
	var term strings.Builder
	WriteVerdicts(&term, []reports.Verdict{*stopped.Verdict})
	if stopped.Status() != "STOP" || !strings.HasPrefix(term.String(), "STOP") {
		t.Errorf("interrupted: view %s, terminal %q; want STOP in both", stopped.Status(), term.String())
	}
}

func TestParseColumns(t *testing.T) {
	cases := []struct {
		in      []string
		want    Columns
		wantErr bool
	}{
		{nil, Columns{}, false},
		{[]string{"p95", "flaps"}, Columns{P95: true, Flaps: true}, false},
		{[]string{"429pct", " Other4xx ", "transport"}, Columns{Pct429: true, Other4xx: true, Transport: true}, false},
		{[]string{"all"}, AllColumns(), false},
		{[]string{"latency"}, Columns{}, true},
	}
	for _, c := range cases {
		got, err := ParseColumns(c.in)
		if (err != nil) != c.wantErr || (!c.wantErr && got != c.want) {
			t.Errorf("ParseColumns(%q) = %+v, %v; want %+v (error %v)", c.in, got, err, c.want, c.wantErr)
		}
	}
}

func TestRatios(t *testing.T) {
	ours := []reports.Row{{Platform: "local", UpTo3S: 89, BackTo1S: -1, Calls: reports.Calls{OK: 25909, TooMany: 10}}}
	rs := Ratios(ours, Published())
	if len(rs) != 3 {
		t.Fatalf("%d ratios", len(rs))
	}
	cases := []struct {
		got  *float64
		want string
	}{
		{rs[0].UpTo3, "0.50×"},   // 89 / 178
		{rs[0].BackTo1, "—"},     // never came back
		{rs[0].CallsOK, "1.0×"},  // same as GKE
		{rs[1].TooMany, "0.01×"}, // 10 / 1193
		{rs[2].TooMany, "—"},     // AKS published 0
	}
	for i, c := range cases {
		if s := FormatRatio(c.got); s != c.want {
			t.Errorf("ratio %d = %s, want %s", i, s, c.want)
		}
	}
}

func TestMarkdownCellEscaping(t *testing.T) {
	got := mdCell("a | b\nc <nil>")
	if got != `a \| b c &lt;nil>` {
		t.Errorf("mdCell = %q", got)
	}
	if strings.Contains(mdCell("x\r\ny"), "\n") {
		t.Error("a cell must stay on one line")
	}
}
