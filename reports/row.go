package reports

// RowFromResults derives the Ramen 0.7.5 table row of a results file: the
// summary record when present, else the row computed from the verdicts (a
// killed run still gets a row from what it measured).
func RowFromResults(res *Results) Row {
	var r Row
	if res.Summary != nil {
		r = *res.Summary
	} else {
		r = SummaryRow(res.Meta.Platform, res.Verdicts)
	}
	r.Source = res.Path
	r.Flaps = Flaps(res.Events)
	return r
}

// SummaryRow builds the table row of a run from its verdicts: "Up to 3" and
// "Back to 1" come from the sustained scenario ("sustained load up
// to the max and back to 1"; times from the start of that scenario's load),
// the call counts are summed over every scenario, and the row passes only
// when every verdict passed.
func SummaryRow(platform string, vs []Verdict) Row {
	r := Row{Platform: platform, UpTo3S: -1, BackTo1S: -1, Passed: len(vs) > 0}
	for _, v := range vs {
		r.Calls.Add(v.Calls)
		if !v.Passed && v.Skipped == "" {
			r.Passed = false
		}
		if v.Scenario == "sustained" {
			r.UpTo3S, r.BackTo1S, r.P95ms = v.UpToMaxS, v.BackTo1S, v.P95ms
		}
	}
	return r
}
