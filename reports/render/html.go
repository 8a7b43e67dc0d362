package render

import (
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/scaleproof/scaleproof/reports"
)

// htmlTable is a table for the template: a header and rows of cells.
type htmlTable struct {
	Header []string
	Rows   [][]string
}

type htmlChart struct {
	Kind, Title, Caption string
	SVG                  template.HTML
}

type htmlScenario struct {
	ID, Name, Title, Status, Error, Note string
	Warning                              string // a flagged imbalance (Imbalance.Warning)
	Charts                               []htmlChart
	Facts, Events, Readyz                htmlTable
	Timeline                             htmlTable // a target scenario's samples
}

type htmlRun struct {
	Title, Source, Incomplete string
	Meta                      [][2]string
	Summary                   htmlTable
	Scenarios                 []htmlScenario
}

type htmlPage struct {
	Table, Ratios           htmlTable
	Published, ProfileNote  string
	Runs                    []htmlRun
	ChartCount, SourceCount int
	Screenshots             []Screenshot
	ScreenshotsDir          string
}

// RenderHTML writes one self-contained HTML file: the published table (with the
// published rows and ratios when asked), and per run its metadata, a scenario
// summary and per scenario its charts (inline SVG drawn by gonum/plot; see
// ScenarioCharts), facts, scale events and /readyz failures. The page loads
// nothing at view time: no script, stylesheet, font or image from elsewhere.
func RenderHTML(w io.Writer, runs []*reports.Results, o Options) error {
	page, err := buildHTML(runs, o)
	if err != nil {
		return err
	}
	if err := htmlTmpl.Execute(w, page); err != nil {
		return fmt.Errorf("report html: %w", err)
	}
	return nil
}

func buildHTML(runs []*reports.Results, o Options) (htmlPage, error) {
	ours, all := Rows(runs, o)
	page := htmlPage{SourceCount: len(runs), Screenshots: o.Screenshots, ScreenshotsDir: ScreenshotsDir}
	page.Table.Header = o.Columns.header()
	page.Table.Rows = o.Columns.rows(all)
	if o.Published {
		page.Published = PublishedSource
		page.ProfileNote = profileNote(runs)
		page.Ratios.Header, page.Ratios.Rows = ratioTable(Ratios(ours, Published()))
	}
	for ri, res := range runs {
		hr := htmlRun{Title: res.RunTitle(), Source: res.Path}
		if res.Incomplete {
			hr.Incomplete = res.IncompleteReason
		}
		hr.Meta = [][2]string{
			{"source", res.Path}, {"platform", res.Meta.Platform}, {"profile", res.Meta.Profile},
			{"version", orDash(res.Meta.Version) + ", commit " + orDash(res.Meta.Commit)}, {"policy", orDash(res.Meta.Policy)},
			{"started", fmtTime(res.Meta.Started)}, {"ended", endedText(res)}, {"settings", strings.Join(sortedSettings(res.Meta.Settings), "  ")},
		}
		views := res.Views()
		hr.Summary = htmlTable{Header: scenarioHeader, Rows: scenarioRows(views)}
		maxInflight, _ := res.SettingInt("max_inflight")
		for si, v := range views {
			hs := htmlScenario{ID: fmt.Sprintf("run%d-s%d", ri+1, si+1), Name: v.Name, Title: v.Title, Status: v.Status()}
			if v.Verdict == nil {
				hs.Note = "No verdict: the run stopped during this scenario. The charts show what was measured until then."
			} else {
				hs.Error = v.Verdict.Error
				if v.Verdict.Skipped != "" {
					hs.Note = "Skipped: " + v.Verdict.Skipped
				}
				hs.Warning = v.Verdict.Imbalance.Warning()
				hs.Facts.Header, hs.Facts.Rows = factTable(v.Verdict.Facts)
			}
			if len(v.Timeline) > 0 {
				hs.Timeline = htmlTable{Header: timelineHeader, Rows: timelineRows(v.Timeline, timelineEvery(v.Timeline))}
			}
			charts, err := ScenarioCharts(v, maxInflight)
			if err != nil {
				return page, err
			}
			for _, c := range charts {
				// The SVG comes from gonum/plot's vgsvg, which escapes the text it draws.
				hs.Charts = append(hs.Charts, htmlChart{Kind: c.Kind, Title: c.Title, Caption: c.Caption, SVG: template.HTML(c.SVG)})
				page.ChartCount++
			}
			if len(v.Events) > 0 {
				hs.Events = htmlTable{Header: eventHeader, Rows: eventRows(v.Events)}
			}
			if len(v.Readyz) > 0 {
				hs.Readyz = htmlTable{Header: readyzHeader, Rows: readyzRows(v)}
			}
			hr.Scenarios = append(hr.Scenarios, hs)
		}
		page.Runs = append(page.Runs, hr)
	}
	return page, nil
}

var htmlTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"cls": func(s string) string {
		switch s {
		case "PASS":
			return "pass"
		case "FAIL":
			return "fail"
		case "NO VERDICT", "SKIP", "STOP", "n/a":
			return "none"
		}
		return ""
	},
}).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>scaleproof report</title>
<style>
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; margin: 0 auto; max-width: 1100px; padding: 1em 1.5em; color: #222; }
h1 { font-size: 1.6em; margin-bottom: .3em; }
h2 { font-size: 1.3em; border-bottom: 2px solid #ddd; padding-bottom: .2em; margin-top: 2em; }
h3 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; }
.badge { display: inline-block; padding: .05em .5em; border-radius: .3em; font-size: .85em; font-weight: bold; color: #fff; }
.pass { background: #2ca02c; } .fail { background: #d62728; } .none { background: #7f7f7f; }
.incomplete, .warning { background: #fff3cd; border: 1px solid #e0c060; padding: .5em .8em; margin: .6em 0; }
.error { background: #fde2e2; border: 1px solid #d62728; padding: .5em .8em; margin: .6em 0; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: .15em 1em; font-size: .9em; }
dl.meta dt { font-weight: bold; } dl.meta dd { margin: 0; overflow-wrap: anywhere; }
.charts { display: grid; grid-template-columns: 1fr; gap: .8em; }
@media (min-width: 1000px) { .charts { grid-template-columns: 1fr 1fr; } }
figure.chart { margin: 0; border: 1px solid #e3e3e3; padding: .3em; background: #fff; }
figure.chart svg { display: block; width: 100%; height: auto; }
figure.chart figcaption { font-size: .8em; color: #555; margin-top: .2em; }
details { margin: .5em 0; } summary { cursor: pointer; }
.note { color: #555; font-size: .9em; }
footer { margin-top: 3em; font-size: .8em; color: #777; }
</style>
</head>
<body>
<h1>scaleproof report</h1>
<p class="note">The published table's layout: Up to 3 and Back to 1 come from the <em>sustained</em> scenario (seconds from its start); calls are summed over every scenario.</p>
<table id="seed-table">
<thead><tr>{{range .Table.Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Table.Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</tbody>
</table>
{{if .Published}}<p class="note">Published rows: {{.Published}}.</p>
<table id="ratios">
<thead><tr>{{range .Ratios.Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Ratios.Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</tbody>
</table>
{{if .ProfileNote}}<p class="note">{{.ProfileNote}}</p>{{end}}{{end}}
{{range .Runs}}
<section class="run">
<h2>{{.Title}}</h2>
{{if .Incomplete}}<div class="incomplete"><strong>INCOMPLETE</strong>: {{.Incomplete}}. What follows is what was measured until then.</div>{{end}}
<dl class="meta">{{range .Meta}}<dt>{{index . 0}}</dt><dd>{{index . 1}}</dd>{{end}}</dl>
<table class="summary">
<thead><tr>{{range .Summary.Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Summary.Rows}}<tr>{{range $i, $c := .}}{{if eq $i 1}}<td><span class="badge {{cls $c}}">{{$c}}</span></td>{{else}}<td>{{$c}}</td>{{end}}{{end}}</tr>{{end}}</tbody>
</table>
{{range .Scenarios}}
<section class="scenario" id="{{.ID}}">
<h3><span class="badge {{cls .Status}}">{{.Status}}</span> {{.Name}}{{if .Title}}: {{.Title}}{{end}}</h3>
{{if .Note}}<div class="incomplete">{{.Note}}</div>{{end}}
{{if .Error}}<div class="error">Error: {{.Error}}</div>{{end}}
{{if .Warning}}<div class="warning">Warning: {{.Warning}}</div>{{end}}
{{if .Charts}}<div class="charts">{{range .Charts}}
<figure class="chart" data-kind="{{.Kind}}">
{{.SVG}}
<figcaption><strong>{{.Title}}.</strong> {{.Caption}}</figcaption>
</figure>{{end}}
</div>{{end}}
{{if .Facts.Rows}}<table class="facts">
<thead><tr>{{range .Facts.Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Facts.Rows}}<tr>{{range $i, $c := .}}{{if eq $i 0}}<td><span class="badge {{cls $c}}">{{$c}}</span></td>{{else}}<td>{{$c}}</td>{{end}}{{end}}</tr>{{end}}</tbody>
</table>{{end}}
{{if .Events.Rows}}<details open><summary>Scale events (seconds from the scenario's start)</summary>
<table class="events">
<thead><tr>{{range .Events.Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Events.Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</tbody>
</table></details>{{end}}
{{if .Timeline.Rows}}<details><summary>Timeline (seconds from the scenario's start)</summary>
<table class="timeline">
<thead><tr>{{range .Timeline.Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Timeline.Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</tbody>
</table></details>{{end}}
{{if .Readyz.Rows}}<details open><summary>Console /readyz failures</summary>
<table class="readyz">
<thead><tr>{{range .Readyz.Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Readyz.Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</tbody>
</table></details>{{end}}
</section>
{{end}}
</section>
{{end}}
{{if .Screenshots}}<section id="screenshots">
<h2>Console screenshots</h2>
<p class="note">The console's pages at the end of the run, as each role sees them (PNG files beside this report, in {{.ScreenshotsDir}}/).</p>
<ul>{{range .Screenshots}}<li><a href="{{$.ScreenshotsDir}}/{{.File}}">{{.File}}</a>: {{.Caption}}</li>{{end}}</ul>
</section>{{end}}
<footer>Rendered by scaleproof from {{.SourceCount}} results file(s), {{.ChartCount}} charts (gonum/plot, inline SVG). This file is self-contained: it loads nothing from the network.</footer>
</body>
</html>
`))
