package render

import (
	"github.com/scaleproof/scaleproof/reports"
)

// latencyCaption is the latency chart's caption for a load model.
func latencyCaption(model string) string {
	if model == reports.ModelOpen {
		return "Per second, from each call's scheduled start (open model: a stalled target shows here)."
	}
	return "Per second, from each call's intended start, closed-loop: a VU waits for each answer, so a stalled target delays calls instead of showing here (not corrected for coordinated omission)."
}

// latencyNote says in a line how a run's latencies were measured.
func latencyNote(model string) string {
	if model == reports.ModelOpen {
		return "open model, from each call's scheduled start"
	}
	return "closed-loop, from each call's intended start; a stalled target delays calls rather than showing (not corrected for coordinated omission)"
}

// factTable is the facts of a verdict as a table: Result, Fact, Detail, with
// a Contract column after Fact when any fact carries a contract or is not
// applicable (a not-applicable fact's Detail is its reason). Without either
// the table is what it always was.
func factTable(facts []reports.Fact) (header []string, rows [][]string) {
	withContract := false
	for _, f := range facts {
		if f.Contract != "" || f.NotApplicable != "" {
			withContract = true
		}
	}
	header = []string{"Result", "Fact", "Detail"}
	if withContract {
		header = []string{"Result", "Fact", "Contract", "Detail"}
	}
	for _, f := range facts {
		detail := f.Detail
		if f.NotApplicable != "" {
			detail = "not applicable: " + f.NotApplicable
		}
		row := []string{f.Result(), f.Name, detail}
		if withContract {
			row = []string{f.Result(), f.Name, f.Contract, detail}
		}
		rows = append(rows, row)
	}
	return header, rows
}
