package render

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/reports"
)

// Options shape a rendered report.
type Options struct {
	// Columns are the extra columns of the published table.
	Columns Columns
	// Published adds Ramen 0.7.5's published rows (Published) under ours and a
	// table of ratios, ours ÷ published.
	Published bool
	// Screenshots are the run's pictures of the console's pages (files in
	// ScreenshotsDir beside the HTML report); the HTML report links them.
	Screenshots []Screenshot
}

// Formats are the formats Render knows, the first being the default.
var Formats = []string{"text", "markdown", "html", "json", "junit"}

// Render writes a report of runs (one or more results files read back) in
// format, one of Formats. It fails on an unknown format, when there is no
// run, or when w fails.
func Render(w io.Writer, format string, runs []*reports.Results, o Options) error {
	if len(runs) == 0 {
		return fmt.Errorf("report: no results to render")
	}
	switch format {
	case "text":
		return RenderText(w, runs, o)
	case "markdown", "md":
		return RenderMarkdown(w, runs, o)
	case "html":
		return RenderHTML(w, runs, o)
	case "json":
		return RenderJSON(w, runs, o)
	case "junit", "xml":
		return RenderJUnit(w, runs, o)
	}
	return fmt.Errorf("report: unknown format %q (have: %s)", format, strings.Join(Formats, ", "))
}

// Rows returns the table rows of runs, one per file ("(incomplete)" added to
// the platform of a killed run's row), then the published rows when asked.
// Rows that would share a platform name (two runs on local) get the run's
// id, which starts with its start time, and its policy: "local (run
// 20261201-093724-32d6a6, hpa)".
func Rows(runs []*reports.Results, o Options) (ours, all []reports.Row) {
	names := map[string]int{}
	for _, res := range runs {
		names[reports.RowFromResults(res).Platform]++
	}
	for _, res := range runs {
		r := reports.RowFromResults(res)
		if names[r.Platform] > 1 {
			r.Platform += " (" + runLabel(res) + ")"
		}
		if res.Incomplete {
			r.Platform += " (incomplete)"
		}
		ours = append(ours, r)
	}
	all = append(all, ours...)
	if o.Published {
		all = append(all, Published()...)
	}
	return ours, all
}

// profileNote warns when a ratio compares times of different profiles.
func profileNote(runs []*reports.Results) string {
	var quick []string
	for _, res := range runs {
		if res.Meta.Profile != "published" {
			quick = append(quick, res.Meta.Platform+" (profile "+res.Meta.Profile+")")
		}
	}
	if len(quick) == 0 {
		return ""
	}
	return "Not run with the published profile: " + strings.Join(quick, ", ") +
		"; its times are not on the published scale (the quick profile divides them by 10), so time ratios say little. " +
		"Run `scaleproof run --profile published` to compare."
}

// fmtS renders seconds with at most one decimal ("4 s", "4.5 s"), "—" when
// negative (never).
func fmtS(v float64) string {
	if v < 0 {
		return "—"
	}
	return strconv.FormatFloat(float64(int64(v*10+0.5))/10, 'f', -1, 64) + " s"
}

// fmtMS renders milliseconds as whole ms, "—" when 0 (no calls).
func fmtMS(v float64) string {
	if v <= 0 {
		return "—"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
}

func fmtPct(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " %" }

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// sortedSettings renders a run's settings as "k=v" in name order.
func sortedSettings(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}

// RenderText writes the published table (with the published rows and ratios when
// asked) and, per file, one PASS/FAIL/NONE line per scenario with its failed
// facts.
func RenderText(w io.Writer, runs []*reports.Results, o Options) error {
	ours, all := Rows(runs, o)
	if err := WriteTable(w, all, o.Columns); err != nil {
		return err
	}
	if o.Published {
		fmt.Fprintf(w, "\npublished rows: %s\n\n", PublishedSource)
		if err := WriteRatios(w, Ratios(ours, Published()), false); err != nil {
			return err
		}
		if n := profileNote(runs); n != "" {
			fmt.Fprintf(w, "note: %s\n", n)
		}
	}
	for _, res := range runs {
		fmt.Fprintf(w, "\n%s (%s):\n", res.Path, res.RunTitle())
		if res.Incomplete {
			fmt.Fprintf(w, "INCOMPLETE: %s\n", res.IncompleteReason)
		}
		for _, v := range res.Views() {
			if v.Verdict == nil {
				fmt.Fprintf(w, "NONE  %-14s no verdict: the run stopped during this scenario\n", v.Name)
				continue
			}
			WriteVerdicts(w, []reports.Verdict{*v.Verdict})
		}
	}
	return nil
}

// RenderMarkdown writes a Markdown report to paste into a release or an
// issue: the published table (with published rows and ratios when asked), then per
// run its metadata, a scenario summary, and per scenario its facts, scale
// events and /readyz failures.
func RenderMarkdown(w io.Writer, runs []*reports.Results, o Options) error {
	ew := &errWriter{w: w}
	ours, all := Rows(runs, o)
	ew.printf("# scaleproof report\n\n")
	ew.do(func(w io.Writer) error { return WriteMarkdown(w, all, o.Columns) })
	if o.Published {
		ew.printf("\nPublished rows: %s.\n\n", PublishedSource)
		ew.do(func(w io.Writer) error { return WriteRatios(w, Ratios(ours, Published()), true) })
		if n := profileNote(runs); n != "" {
			ew.printf("\n> %s\n", n)
		}
	}
	for _, res := range runs {
		ew.printf("\n## %s\n\n", mdCell(res.RunTitle()))
		if res.Incomplete {
			ew.printf("**INCOMPLETE**: %s. The figures below are what was measured until then.\n\n", res.IncompleteReason)
		}
		ew.printf("- source: `%s`\n", res.Path)
		ew.printf("- version %s, commit %s, policy %s\n", orDash(res.Meta.Version), orDash(res.Meta.Commit), orDash(res.Meta.Policy))
		ew.printf("- started %s, ended %s\n", fmtTime(res.Meta.Started), endedText(res))
		ew.printf("- latency: %s\n", latencyNote(res.LoadModel()))
		if len(res.Meta.Settings) > 0 {
			ew.printf("- settings: `%s`\n", strings.Join(sortedSettings(res.Meta.Settings), "` `"))
		}
		views := res.Views()
		ew.printf("\n")
		ew.do(func(w io.Writer) error { return writeMarkdownTable(w, scenarioHeader, scenarioRows(views)) })
		for _, v := range views {
			title := ""
			if v.Title != "" {
				title = ": " + v.Title
			}
			ew.printf("\n### %s %s%s\n\n", v.Status(), v.Name, mdCell(title))
			if v.Verdict == nil {
				ew.printf("No verdict: the run stopped during this scenario.\n")
			} else {
				if v.Verdict.Error != "" {
					ew.printf("Error: %s\n\n", mdCell(v.Verdict.Error))
				}
				if v.Verdict.Skipped != "" {
					ew.printf("Skipped: %s\n\n", mdCell(v.Verdict.Skipped))
				}
				if warn := v.Verdict.Imbalance.Warning(); warn != "" {
					ew.printf("Warning: %s\n\n", mdCell(warn))
				}
				header, rows := factTable(v.Verdict.Facts)
				if len(rows) > 0 {
					ew.do(func(w io.Writer) error { return writeMarkdownTable(w, header, rows) })
				}
			}
			if len(v.Timeline) > 0 {
				ew.printf("\nTimeline (every %s; seconds from the scenario's start):\n\n", timelineEveryNote(v.Timeline))
				ew.do(func(w io.Writer) error { return WriteTimeline(w, v.Timeline, timelineEvery(v.Timeline), true) })
			}
			if len(v.Events) > 0 {
				ew.printf("\nScale events (seconds from the scenario's start):\n\n")
				ew.do(func(w io.Writer) error { return writeMarkdownTable(w, eventHeader, eventRows(v.Events)) })
			}
			if len(v.Readyz) > 0 {
				ew.printf("\nConsole /readyz failures:\n\n")
				ew.do(func(w io.Writer) error { return writeMarkdownTable(w, readyzHeader, readyzRows(v)) })
			}
		}
	}
	return ew.err
}

var (
	scenarioHeader = []string{"Scenario", "Verdict", "Length", "Up to max", "All ready", "Back to 1", "Peak",
		"Calls ok", "429", "5xx", "Other", "429 %", "p95"}
	eventHeader  = []string{"Count", "Decision", "Ready", "Served", "Reason"}
	readyzHeader = []string{"At", "Status", "Error"}
)

func scenarioRows(views []reports.ScenarioView) [][]string {
	var rows [][]string
	for _, v := range views {
		if v.Verdict == nil {
			rows = append(rows, []string{v.Name, v.Status(), fmtS(v.DurationS()), "—", "—", "—", "—", "—", "—", "—", "—", "—", "—"})
			continue
		}
		x := v.Verdict
		rows = append(rows, []string{v.Name, v.Status(), fmtS(x.DurationS), fmtS(orNever(x.UpToMaxS)), fmtS(orNever(x.ReadyMaxS)),
			fmtS(orNever(x.BackTo1S)), strconv.Itoa(x.PeakCount), FormatCount(x.Calls.OK), FormatCount(x.Calls.TooMany),
			FormatCount(x.Calls.Server5xx), FormatCount(x.Calls.Others()), fmtPct(x.Calls.Pct429()), fmtMS(x.P95ms)})
	}
	return rows
}

// orNever maps a time the verdict left out (0, omitted by omitempty) to -1.
func orNever(v float64) float64 {
	if v == 0 {
		return -1
	}
	return v
}

func eventRows(evs []reports.ScaleEvent) [][]string {
	var rows [][]string
	for _, e := range evs {
		rows = append(rows, []string{fmt.Sprintf("%d → %d", e.From, e.To), fmtS(e.DecisionS), fmtS(e.ReadyS), fmtS(e.ServedS), e.Reason})
	}
	return rows
}

func readyzRows(v reports.ScenarioView) [][]string {
	var rows [][]string
	for _, f := range v.Readyz {
		at := fmtTime(f.At)
		if !v.Started.IsZero() {
			at = fmtS(f.At.Sub(v.Started).Seconds())
		}
		st := "no answer"
		if f.Status != 0 {
			st = strconv.Itoa(f.Status)
		}
		rows = append(rows, []string{at, st, f.Err})
	}
	return rows
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// errWriter keeps the first write error so a renderer checks once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

func (e *errWriter) do(f func(io.Writer) error) {
	if e.err == nil {
		e.err = f(e.w)
	}
}

// ReportSchema names the JSON report's format and version.
const ReportSchema = "scaleproof.report/v1"

// JSONReport is the document RenderJSON writes.
type JSONReport struct {
	Schema    string         `json:"schema"`
	Runs      []JSONRun      `json:"runs"`
	Published *JSONPublished `json:"published,omitempty"`
}

// JSONRun is one results file in a JSON report. Times are seconds from the
// scenario's start, -1 for never; latencies are milliseconds.
type JSONRun struct {
	Source           string            `json:"source"`
	RunID            string            `json:"run_id"`
	Platform         string            `json:"platform"`
	Profile          string            `json:"profile"`
	Version          string            `json:"version"`
	Commit           string            `json:"commit,omitempty"`
	Settings         map[string]string `json:"settings,omitempty"`
	LoadModel        string            `json:"load_model"` // ModelClosed or ModelOpen: how the latencies were measured
	Started          time.Time         `json:"started"`
	Ended            *time.Time        `json:"ended,omitempty"`
	ExitCode         *int              `json:"exit_code,omitempty"`
	Incomplete       bool              `json:"incomplete"`
	IncompleteReason string            `json:"incomplete_reason,omitempty"`
	Row              reports.Row       `json:"row"`
	Scenarios        []JSONScenario    `json:"scenarios"`
}

// JSONScenario is one scenario of a run in a JSON report.
type JSONScenario struct {
	Name           string                  `json:"name"`
	Title          string                  `json:"title,omitempty"`
	Status         string                  `json:"status"` // PASS, FAIL, SKIP, NO VERDICT
	Passed         bool                    `json:"passed"`
	DurationS      float64                 `json:"duration_s"`
	UpToMaxS       float64                 `json:"up_to_max_s"`
	ReadyMaxS      float64                 `json:"ready_max_s"`
	BackTo1S       float64                 `json:"back_to_1_s"`
	PeakCount      int                     `json:"peak_count"`
	Calls          reports.Calls           `json:"calls"`
	Pct429         float64                 `json:"pct_429"`
	P95ms          float64                 `json:"p95_ms"`
	Error          string                  `json:"error,omitempty"`
	Skipped        string                  `json:"skipped,omitempty"` // why it was not judged
	Facts          []reports.Fact          `json:"facts"`
	ScaleEvents    []reports.ScaleEvent    `json:"scale_events"`
	ReadyzFailures []reports.ReadyzFailure `json:"readyz_failures"`
	// Timeline is a target scenario's samples (absent for the console's).
	Timeline []reports.TimelinePoint `json:"timeline,omitempty"`
}

// JSONPublished is the published table and our ratios to it.
type JSONPublished struct {
	Source string        `json:"source"`
	Rows   []reports.Row `json:"rows"`
	Ratios []Ratio       `json:"ratios"`
	Note   string        `json:"note,omitempty"`
}

// BuildJSON builds the JSON report of runs (see RenderJSON).
func BuildJSON(runs []*reports.Results, o Options) JSONReport {
	rep := JSONReport{Schema: ReportSchema, Runs: []JSONRun{}}
	ours, _ := Rows(runs, o)
	for i, res := range runs {
		jr := JSONRun{Source: res.Path, RunID: res.Meta.RunID, Platform: res.Meta.Platform, Profile: res.Meta.Profile,
			Version: res.Meta.Version, Commit: res.Meta.Commit, Settings: res.Meta.Settings, LoadModel: res.LoadModel(), Started: res.Meta.Started,
			Incomplete: res.Incomplete, IncompleteReason: res.IncompleteReason, Row: ours[i], Scenarios: []JSONScenario{}}
		if res.End != nil {
			ended, code := res.End.Ended, res.End.ExitCode
			jr.Ended, jr.ExitCode = &ended, &code
		}
		for _, v := range res.Views() {
			js := JSONScenario{Name: v.Name, Title: v.Title, Status: v.Status(), DurationS: v.DurationS(),
				UpToMaxS: -1, ReadyMaxS: -1, BackTo1S: -1, Facts: []reports.Fact{}, ScaleEvents: v.Events, ReadyzFailures: v.Readyz, Timeline: v.Timeline}
			if x := v.Verdict; x != nil {
				js.Passed, js.UpToMaxS, js.ReadyMaxS, js.BackTo1S = x.Passed, orNever(x.UpToMaxS), orNever(x.ReadyMaxS), orNever(x.BackTo1S)
				js.PeakCount, js.Calls, js.Pct429, js.P95ms, js.Error = x.PeakCount, x.Calls, x.Calls.Pct429(), x.P95ms, x.Error
				js.Skipped = x.Skipped
				if x.Facts != nil {
					js.Facts = x.Facts
				}
			}
			if js.ScaleEvents == nil {
				js.ScaleEvents = []reports.ScaleEvent{}
			}
			if js.ReadyzFailures == nil {
				js.ReadyzFailures = []reports.ReadyzFailure{}
			}
			jr.Scenarios = append(jr.Scenarios, js)
		}
		rep.Runs = append(rep.Runs, jr)
	}
	if o.Published {
		rep.Published = &JSONPublished{Source: PublishedSource, Rows: Published(), Ratios: Ratios(ours, Published()), Note: profileNote(runs)}
	}
	return rep
}

// RenderJSON writes the JSON report (JSONReport, schema ReportSchema),
// indented, one document.
func RenderJSON(w io.Writer, runs []*reports.Results, o Options) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(BuildJSON(runs, o))
}

// runLabel tells runs on one platform apart: "run <id>, <policy>", or the
// start time and file when the run has no id.
func runLabel(res *reports.Results) string {
	l := "run " + res.Meta.RunID
	if res.Meta.RunID == "" {
		l = fmtTime(res.Meta.Started) + ", " + res.Path
	}
	if res.Meta.Policy != "" {
		l += ", " + res.Meta.Policy
	}
	return l
}

// endedText is when and how res's run ended: its end time, how long after
// the start, the exit code and the reason; "—" without an end record.
func endedText(res *reports.Results) string {
	if res.End == nil {
		return "—"
	}
	ended := fmt.Sprintf("%s (%s), exit code %d", fmtTime(res.End.Ended), fmtS(res.End.Ended.Sub(res.Meta.Started).Seconds()), res.End.ExitCode)
	if res.End.Reason != "" {
		ended += ": " + res.End.Reason
	}
	return ended
}
