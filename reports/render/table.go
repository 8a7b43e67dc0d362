package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/scaleproof/scaleproof/reports"
)

// Columns are optional extra columns of the table.
type Columns struct {
	Other4xx  bool // other 4xx
	Transport bool // transport errors
	Pct429    bool // 429 as a percentage of all calls
	P95       bool // latency p95
	Flaps     bool // scale-ups that followed a scale-down (see Flaps)
}

// AllColumns turns every extra column on.
func AllColumns() Columns {
	return Columns{Other4xx: true, Transport: true, Pct429: true, P95: true, Flaps: true}
}

// ColumnNames are the names ParseColumns accepts, in table order.
var ColumnNames = []string{"other4xx", "transport", "429pct", "p95", "flaps"}

// ParseColumns reads extra column names (see ColumnNames; "all" for every
// one). An unknown name is an error that lists the known ones.
func ParseColumns(names []string) (Columns, error) {
	var c Columns
	for _, n := range names {
		switch strings.ToLower(strings.TrimSpace(n)) {
		case "":
		case "all":
			c = AllColumns()
		case "other4xx":
			c.Other4xx = true
		case "transport":
			c.Transport = true
		case "429pct", "429%", "pct429":
			c.Pct429 = true
		case "p95":
			c.P95 = true
		case "flaps":
			c.Flaps = true
		default:
			return c, fmt.Errorf("unknown column %q (have: %s, all)", n, strings.Join(ColumnNames, ", "))
		}
	}
	return c, nil
}

// FormatSeconds renders a time as the published table does ("178 s"), "—" when never.
func FormatSeconds(s float64) string {
	if s < 0 {
		return "—"
	}
	return strconv.FormatFloat(s, 'f', 0, 64) + " s"
}

// FormatCount renders a count with thousands separated by a space as the
// published table does ("25 909").
func FormatCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func (c Columns) header() []string {
	h := []string{"Platform", "Up to 3", "Back to 1", "Calls ok", "429 (back-pressure)", "5xx"}
	if c.Other4xx {
		h = append(h, "Other 4xx")
	}
	if c.Transport {
		h = append(h, "Transport errors")
	}
	if c.Pct429 {
		h = append(h, "429 %")
	}
	if c.P95 {
		h = append(h, "p95")
	}
	if c.Flaps {
		h = append(h, "Flaps")
	}
	return h
}

func (c Columns) cells(r reports.Row) []string {
	out := []string{r.Platform, FormatSeconds(r.UpTo3S), FormatSeconds(r.BackTo1S),
		FormatCount(r.Calls.OK), FormatCount(r.Calls.TooMany), FormatCount(r.Calls.Server5xx)}
	// The published table has no other 4xx, transport errors or flaps: "—"
	// for those rather than a 0 it never claimed.
	pub := r.Source == PublishedSource
	unknown := func(s string) string {
		if pub {
			return "—"
		}
		return s
	}
	if c.Other4xx {
		out = append(out, unknown(FormatCount(r.Calls.Other4xx)))
	}
	if c.Transport {
		out = append(out, unknown(FormatCount(r.Calls.Transport)))
	}
	if c.Pct429 {
		out = append(out, strconv.FormatFloat(r.Calls.Pct429(), 'f', 1, 64)+" %")
	}
	if c.P95 {
		p95 := "—"
		if r.P95ms > 0 {
			p95 = strconv.FormatFloat(r.P95ms, 'f', 0, 64) + " ms"
		}
		out = append(out, p95)
	}
	if c.Flaps {
		out = append(out, unknown(strconv.Itoa(r.Flaps)))
	}
	return out
}

// WriteTable writes rows as an aligned plain-text table in the published layout
// (times in whole seconds, "—" for never; counts with thousands spaced).
func WriteTable(w io.Writer, rows []reports.Row, c Columns) error {
	return writeTextTable(w, c.header(), c.rows(rows))
}

// WriteMarkdown writes rows as a Markdown table in the published layout.
func WriteMarkdown(w io.Writer, rows []reports.Row, c Columns) error {
	return writeMarkdownTable(w, c.header(), c.rows(rows))
}

func (c Columns) rows(rows []reports.Row) [][]string {
	cells := make([][]string, 0, len(rows))
	for _, r := range rows {
		cells = append(cells, c.cells(r))
	}
	return cells
}

// writeTable writes header and rows as a Markdown table when markdown, else
// as an aligned text table.
func writeTable(w io.Writer, markdown bool, header []string, rows [][]string) error {
	if markdown {
		return writeMarkdownTable(w, header, rows)
	}
	return writeTextTable(w, header, rows)
}

func writeTextTable(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// mdCell makes s safe inside a Markdown table cell or heading: one line,
// pipes escaped, "<" as "&lt;" (so "<nil>" is not read as an HTML tag).
func mdCell(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "|", "\\|", "<", "&lt;").Replace(s)
	return strings.TrimSpace(s)
}

func writeMarkdownTable(w io.Writer, header []string, rows [][]string) error {
	esc := func(cells []string) string {
		out := make([]string, len(cells))
		for i, c := range cells {
			out[i] = mdCell(c)
		}
		return strings.Join(out, " | ")
	}
	if _, err := fmt.Fprintf(w, "| %s |\n|%s\n", esc(header), strings.Repeat(" --- |", len(header))); err != nil {
		return err
	}
	for _, r := range rows {
		if _, err := fmt.Fprintf(w, "| %s |\n", esc(r)); err != nil {
			return err
		}
	}
	return nil
}

// WriteVerdicts writes one pass/fail line per scenario with its failed facts
// and its warnings (a flagged imbalance, see Imbalance.Flagged).
func WriteVerdicts(w io.Writer, vs []reports.Verdict) {
	for _, v := range vs {
		fmt.Fprintf(w, "%s  %-14s %5.0f s  ok %s, 429 %s, 5xx %s\n", v.Status(), v.Scenario, v.DurationS,
			FormatCount(v.Calls.OK), FormatCount(v.Calls.TooMany), FormatCount(v.Calls.Server5xx))
		if v.Error != "" {
			fmt.Fprintf(w, "      error: %s\n", v.Error)
		}
		if v.Skipped != "" {
			fmt.Fprintf(w, "      skipped: %s\n", v.Skipped)
		}
		if warn := v.Imbalance.Warning(); warn != "" {
			fmt.Fprintf(w, "      warning: %s\n", warn)
		}
		for _, f := range v.Facts {
			switch {
			case f.NotApplicable != "":
				fmt.Fprintf(w, "      n/a: %s: %s\n", f.Name, f.NotApplicable)
			case !f.Passed:
				fmt.Fprintf(w, "      failed: %s: %s%s\n", f.Name, f.Detail, contractNote(f))
			}
		}
	}
}

// contractNote is " (contract: TEXT)" for a fact judged on a target's
// contract, "" for the console's facts.
func contractNote(f reports.Fact) string {
	if f.Contract == "" {
		return ""
	}
	return " (contract: " + f.Contract + ")"
}

// TargetRow is one line of a target run's table (--target hpa or keda):
// the scenario, its verdict and its facts by outcome.
type TargetRow struct {
	Scenario             string
	Verdict              string // PASS, FAIL, SKIP, STOP
	Passed, Failed, NotA int
}

// TargetRows builds a target run's table from its verdicts.
func TargetRows(vs []reports.Verdict) []TargetRow {
	out := make([]TargetRow, 0, len(vs))
	for _, v := range vs {
		r := TargetRow{Scenario: v.Scenario, Verdict: reports.ScenarioView{Verdict: &v}.Status()}
		r.Passed, r.Failed, r.NotA = reports.CountFacts(v.Facts)
		out = append(out, r)
	}
	return out
}

var targetHeader = []string{"Scenario", "Verdict", "Facts passed", "n/a"}

func (r TargetRow) cells() []string {
	return []string{r.Scenario, r.Verdict, fmt.Sprintf("%d of %d", r.Passed, r.Passed+r.Failed), strconv.Itoa(r.NotA)}
}

// WriteTargetTable writes a target run's table: one row per scenario with
// its verdict, the facts that passed of those judged, and the facts that
// are not applicable to the target (Markdown when markdown, else aligned
// text).
func WriteTargetTable(w io.Writer, vs []reports.Verdict, markdown bool) error {
	var rows [][]string
	for _, r := range TargetRows(vs) {
		rows = append(rows, r.cells())
	}
	return writeTable(w, markdown, targetHeader, rows)
}
