package render

import (
	"io"
	"strconv"

	"github.com/scaleproof/scaleproof/reports"
)

// PublishedSource is where the published table comes from.
const PublishedSource = "Ramen 0.7.5's autoscaling notes, \"Load tests\", results of 2026-10-11"

// Published is the table published in Ramen 0.7.5's autoscaling notes ("Results from the last round
// (2026-10-11)"): 64 concurrent tools/call through the edge, one zone with
// max 3, scheduler every 20 s, five scenarios, times from the start of the run.
func Published() []reports.Row {
	mk := func(p string, up, down float64, ok, tooMany int64) reports.Row {
		return reports.Row{Platform: p, UpTo3S: up, BackTo1S: down, Calls: reports.Calls{OK: ok, TooMany: tooMany}, Passed: true, Source: PublishedSource}
	}
	return []reports.Row{
		mk("GKE", 178, 748, 25909, 117),
		mk("EKS", 184, 613, 14975, 1193),
		mk("AKS", 137, 601, 21567, 0),
	}
}

// Ratio compares one of our rows with one published row: ours ÷ published,
// column by column. A ratio is nil when it has no meaning: the published
// value is 0, or either time is "never" (-1).
type Ratio struct {
	Ours      string   `json:"ours"`      // our row's Platform
	Source    string   `json:"source"`    // our row's results file
	Published string   `json:"published"` // the published row's Platform (GKE, EKS, AKS)
	UpTo3     *float64 `json:"up_to_3"`
	BackTo1   *float64 `json:"back_to_1"`
	CallsOK   *float64 `json:"calls_ok"`
	TooMany   *float64 `json:"429"`
}

// Ratios compares every row of ours with every published row, ours first.
func Ratios(ours, published []reports.Row) []Ratio {
	div := func(a, b float64) *float64 {
		if a < 0 || b <= 0 {
			return nil
		}
		r := a / b
		return &r
	}
	var out []Ratio
	for _, o := range ours {
		for _, p := range published {
			out = append(out, Ratio{
				Ours: o.Platform, Source: o.Source, Published: p.Platform,
				UpTo3:   div(o.UpTo3S, p.UpTo3S),
				BackTo1: div(o.BackTo1S, p.BackTo1S),
				CallsOK: div(float64(o.Calls.OK), float64(p.Calls.OK)),
				TooMany: div(float64(o.Calls.TooMany), float64(p.Calls.TooMany)),
			})
		}
	}
	return out
}

// FormatRatio renders a ratio with two significant decimals ("0.25×",
// "1.8×", "12×"), "—" when nil.
func FormatRatio(r *float64) string {
	if r == nil {
		return "—"
	}
	switch v := *r; {
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 0, 64) + "×"
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 1, 64) + "×"
	default:
		return strconv.FormatFloat(v, 'f', 2, 64) + "×"
	}
}

// WriteRatios writes the ratios as a Markdown table (markdown true) or an
// aligned text table.
func WriteRatios(w io.Writer, rs []Ratio, markdown bool) error {
	h, rows := ratioTable(rs)
	return writeTable(w, markdown, h, rows)
}

// ratioTable is the header and rows of the ratios' table.
func ratioTable(rs []Ratio) (header []string, rows [][]string) {
	rows = [][]string{}
	for _, r := range rs {
		rows = append(rows, []string{r.Ours + " ÷ " + r.Published, FormatRatio(r.UpTo3), FormatRatio(r.BackTo1),
			FormatRatio(r.CallsOK), FormatRatio(r.TooMany)})
	}
	return []string{"Ours ÷ published", "Up to 3", "Back to 1", "Calls ok", "429 (back-pressure)"}, rows
}
