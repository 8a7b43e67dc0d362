package render

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/scaleproof/scaleproof/reports"
)

// Chart is one rendered chart of a scenario: an inline SVG document (no XML
// declaration, no external reference) and what it shows.
type Chart struct {
	Kind    string // "count", "inflight", "calls", "latency"
	Title   string
	Caption string
	SVG     string
}

// Chart size: the SVG's natural size in points; the HTML scales it to the
// page width.
const (
	chartW = 7.5 * vg.Inch
	chartH = 2.7 * vg.Inch
)

var (
	colBlue   = color.RGBA{31, 119, 180, 255}
	colGreen  = color.RGBA{44, 160, 44, 255}
	colOrange = color.RGBA{255, 127, 14, 255}
	colRed    = color.RGBA{214, 39, 40, 255}
	colPurple = color.RGBA{148, 103, 189, 255}
	colGray   = color.RGBA{127, 127, 127, 255}
	colBlack  = color.RGBA{0, 0, 0, 255}
	colEvent  = color.RGBA{120, 120, 120, 160}
)

// ScenarioCharts renders the charts of one scenario, x in seconds from its
// start: count, ready and max (zone samples) with the scale events marked
// (decision ▲, ready ●, served ○); and, when the scenario ran load, calls in
// flight against the in-flight limit (max_inflight × ready workers; left out
// for files written before the in_flight field), calls/s by class, and
// latency p50/p95/p99. Every chart marks the scale decisions
// with a dashed vertical line. maxInflight ≤ 0 leaves the limit out.
func ScenarioCharts(v reports.ScenarioView, maxInflight int) ([]Chart, error) {
	xmax := math.Max(v.DurationS(), 1)
	var out []Chart
	add := func(kind, title, caption string, p *chart, err error) error {
		if err != nil {
			return fmt.Errorf("chart %s of %s: %w", kind, v.Name, err)
		}
		svg, err := p.svg()
		if err != nil {
			return fmt.Errorf("chart %s of %s: %w", kind, v.Name, err)
		}
		out = append(out, Chart{Kind: kind, Title: title, Caption: caption, SVG: svg})
		return nil
	}
	if len(v.Samples) > 0 {
		p, err := countChart(v, xmax)
		if err := add("count", "Workers: count and ready vs max",
			"Sampled every second. Red ▲: the decision (the count changed); green ●: the new workers ready; purple ○: the first ok call served after that.", p, err); err != nil {
			return nil, err
		}
	}
	if len(v.Seconds) == 0 {
		return out, nil
	}
	if slices.ContainsFunc(v.Seconds, func(s reports.Second) bool { return s.InFlight > 0 }) { // files written before in_flight existed have none
		p, err := inflightChart(v, xmax, maxInflight)
		if err := add("inflight", "Calls in flight vs limit",
			"Calls started and not yet answered at the end of each second; the limit is max_inflight × ready workers.", p, err); err != nil {
			return nil, err
		}
	}
	p, err := callsChart(v, xmax)
	if err := add("calls", "Calls per second by class", "Calls answered in each second, by class.", p, err); err != nil {
		return nil, err
	}
	p, err = latencyChart(v, xmax)
	if err := add("latency", "Latency percentiles", latencyCaption(v.LoadModel), p, err); err != nil {
		return nil, err
	}
	return out, nil
}

// chart is a plot and its legend, drawn to the right of the plot so that
// it never hides the data.
type chart struct {
	p      *plot.Plot
	leg    plot.Legend
	labels []string
}

func sans(size vg.Length) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
}

// newPlot is a chart with sans-serif text, a grid, and the x axis in
// seconds from 0 to xmax.
func newPlot(title, ylabel string, xmax float64) *chart {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = sans(12)
	p.X.Label.Text = "seconds from the scenario's start"
	p.Y.Label.Text = ylabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(10)
		a.Tick.Label.Font = sans(9)
		a.Tick.Marker = plainTicks{}
	}
	p.Add(plotter.NewGrid())
	p.X.Min, p.X.Max = 0, xmax
	leg := plot.NewLegend()
	leg.TextStyle.Font = sans(9)
	leg.Top, leg.Left = true, true
	leg.ThumbnailWidth = vg.Points(16)
	leg.Padding = vg.Points(2)
	return &chart{p: p, leg: leg}
}

func (c *chart) legend(name string, th ...plot.Thumbnailer) {
	c.leg.Add(name, th...)
	c.labels = append(c.labels, name)
}

// svg draws the plot on the left and the legend in a column on its right,
// and returns the <svg> element alone (the XML declaration removed, so it
// can sit inline in HTML).
func (c *chart) svg() (string, error) {
	cv := vgsvg.New(chartW, chartH)
	dc := draw.New(cv)
	legW := vg.Length(0)
	for _, l := range c.labels {
		legW = max(legW, c.leg.TextStyle.Width(l))
	}
	if legW > 0 {
		legW += c.leg.ThumbnailWidth + vg.Points(14)
	}
	c.p.Draw(draw.Crop(dc, 0, -legW, 0, 0))
	if legW > 0 {
		top := c.p.Title.TextStyle.Rectangle(c.p.Title.Text).Size().Y + c.p.Title.Padding + vg.Points(4)
		c.leg.Draw(draw.Crop(dc, chartW-legW+vg.Points(6), 0, 0, -top))
	}
	return InlineSVG(cv)
}

// InlineSVG is the canvas as an inline <svg> element for an HTML page: its
// output from the <svg> tag on, without the XML prolog. An error when the
// canvas writes no <svg> element.
func InlineSVG(cv *vgsvg.Canvas) (string, error) {
	var b bytes.Buffer
	if _, err := cv.WriteTo(&b); err != nil {
		return "", err
	}
	s := b.String()
	i := strings.Index(s, "<svg")
	if i < 0 {
		return "", fmt.Errorf("svg: no <svg> element in the canvas output")
	}
	return s[i:], nil
}

func line(pts plotter.XYs, c color.Color, width float64, dashed bool, step plotter.StepKind) (*plotter.Line, error) {
	l, err := plotter.NewLine(pts)
	if err != nil {
		return nil, err
	}
	l.Color = c
	l.Width = vg.Points(width)
	l.StepStyle = step
	if dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	return l, nil
}

// series is a named line: its points, colour, width in points, dash and
// step kind.
type series struct {
	name   string
	pts    plotter.XYs
	c      color.Color
	width  float64
	dashed bool
	step   plotter.StepKind
}

// addSeries adds each named line that has points, in order.
func addSeries(p *chart, ss ...series) error {
	for _, s := range ss {
		if len(s.pts) == 0 {
			continue
		}
		l, err := line(s.pts, s.c, s.width, s.dashed, s.step)
		if err != nil {
			return err
		}
		p.p.Add(l)
		p.legend(s.name, l)
	}
	return nil
}

// finishY fixes the y range to [0, top] with some headroom and draws the
// scale decisions as dashed verticals.
func finishY(c *chart, top float64, events []reports.ScaleEvent, xmax float64) error {
	if top <= 0 {
		top = 1
	}
	top *= 1.1
	p := c.p
	p.Y.Min, p.Y.Max = 0, top
	p.X.Min, p.X.Max = 0, xmax
	first := true
	for _, e := range events {
		if e.DecisionS < 0 || e.DecisionS > xmax {
			continue
		}
		l, err := line(plotter.XYs{{X: e.DecisionS, Y: 0}, {X: e.DecisionS, Y: top}}, colEvent, 0.8, true, plotter.NoStep)
		if err != nil {
			return err
		}
		p.Add(l)
		if first {
			c.legend("scale decision", l)
			first = false
		}
	}
	return nil
}

// finish is finishY, then addSeries of ss: p, or the first error.
func finish(p *chart, top float64, events []reports.ScaleEvent, xmax float64, ss ...series) (*chart, error) {
	if err := finishY(p, top, events, xmax); err != nil {
		return nil, err
	}
	if err := addSeries(p, ss...); err != nil {
		return nil, err
	}
	return p, nil
}

func countChart(v reports.ScenarioView, xmax float64) (*chart, error) {
	p := newPlot("count and ready vs max", "workers", xmax)
	var count, ready, mx plotter.XYs
	top := 1.0
	for _, s := range v.Samples {
		if s.Sample.Err != "" {
			continue
		}
		count = append(count, plotter.XY{X: s.T, Y: float64(s.Sample.Count)})
		ready = append(ready, plotter.XY{X: s.T, Y: float64(s.Sample.Ready)})
		mx = append(mx, plotter.XY{X: s.T, Y: float64(s.Sample.Max)})
		top = math.Max(top, float64(max(s.Sample.Count, s.Sample.Ready, s.Sample.Max)))
	}
	if err := finishY(p, top, v.Events, xmax); err != nil {
		return nil, err
	}
	p.p.Y.Tick.Marker = integerTicks{}
	if err := addSeries(p, series{"max", holdToEnd(mx, xmax), colBlack, 1.2, true, plotter.PostStep},
		series{"count", holdToEnd(count, xmax), colBlue, 2, false, plotter.PostStep},
		series{"ready", holdToEnd(ready, xmax), colGreen, 1.2, false, plotter.PostStep}); err != nil {
		return nil, err
	}
	var dec, rdy, srv plotter.XYs
	for _, e := range v.Events {
		y := float64(e.To)
		if e.DecisionS >= 0 {
			dec = append(dec, plotter.XY{X: e.DecisionS, Y: y})
		}
		if e.ReadyS >= 0 {
			rdy = append(rdy, plotter.XY{X: e.ReadyS, Y: y})
		}
		if e.ServedS >= 0 {
			srv = append(srv, plotter.XY{X: e.ServedS, Y: y})
		}
	}
	for _, g := range []struct {
		name  string
		pts   plotter.XYs
		c     color.Color
		shape draw.GlyphDrawer
		r     float64
	}{{"decision", dec, colRed, draw.PyramidGlyph{}, 4}, {"ready", rdy, colGreen, draw.CircleGlyph{}, 3}, {"served", srv, colPurple, draw.RingGlyph{}, 5.5}} {
		if len(g.pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(g.pts)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: g.c, Radius: vg.Points(g.r), Shape: g.shape}
		p.p.Add(sc)
		p.legend(g.name+" time", sc)
	}
	return p, nil
}

// holdToEnd extends a step series to x (its last value held), so that the
// last sample shows as a step and not as a point at the chart's edge.
func holdToEnd(pts plotter.XYs, x float64) plotter.XYs {
	if n := len(pts); n > 0 && pts[n-1].X < x {
		pts = append(pts, plotter.XY{X: x, Y: pts[n-1].Y})
	}
	return pts
}

// plainTicks is gonum's default choice of ticks with each label in its
// shortest form: "250", "2.5", not "250.00".
type plainTicks struct{}

// Ticks implements plot.Ticker.
func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i, t := range ts {
		if v, err := strconv.ParseFloat(t.Label, 64); err == nil && t.Label != "" {
			ts[i].Label = strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	return ts
}

// integerTicks marks whole numbers only (worker counts), about five labels.
type integerTicks struct{}

// Ticks implements plot.Ticker.
func (integerTicks) Ticks(lo, hi float64) []plot.Tick {
	step := math.Max(1, math.Ceil((hi-lo)/5))
	var out []plot.Tick
	for v := math.Ceil(lo); v <= hi; v += step {
		out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
	}
	return out
}

func inflightChart(v reports.ScenarioView, xmax float64, maxInflight int) (*chart, error) {
	p := newPlot("calls in flight vs limit", "calls", xmax)
	var inflight, limit plotter.XYs
	top := 1.0
	for _, s := range v.Seconds {
		inflight = append(inflight, plotter.XY{X: float64(s.T), Y: float64(s.InFlight)})
		top = math.Max(top, float64(s.InFlight))
		if maxInflight > 0 {
			l := float64(maxInflight * s.Ready)
			limit = append(limit, plotter.XY{X: float64(s.T), Y: l})
			top = math.Max(top, l)
		}
	}
	return finish(p, top, v.Events, xmax, series{"limit", holdToEnd(limit, float64(v.Seconds[len(v.Seconds)-1].T+1)), colRed, 1.2, true, plotter.PostStep},
		series{"in flight", inflight, colBlue, 2, false, plotter.NoStep})
}

func callsChart(v reports.ScenarioView, xmax float64) (*chart, error) {
	p := newPlot("calls/s by class", "calls/s", xmax)
	var ok, tooMany, s5xx, other plotter.XYs
	var anyOther bool
	top := 1.0
	for _, s := range v.Seconds {
		x := float64(s.T)
		ok = append(ok, plotter.XY{X: x, Y: float64(s.Calls.OK)})
		tooMany = append(tooMany, plotter.XY{X: x, Y: float64(s.Calls.TooMany)})
		s5xx = append(s5xx, plotter.XY{X: x, Y: float64(s.Calls.Server5xx)})
		other = append(other, plotter.XY{X: x, Y: float64(s.Calls.Others())})
		anyOther = anyOther || s.Calls.Others() > 0
		top = math.Max(top, float64(max(s.Calls.OK, s.Calls.TooMany, s.Calls.Server5xx, s.Calls.Others())))
	}
	if !anyOther {
		other = nil
	}
	return finish(p, top, v.Events, xmax, series{"ok", ok, colGreen, 1.6, false, plotter.NoStep}, series{"429", tooMany, colOrange, 1.6, false, plotter.NoStep},
		series{"5xx", s5xx, colRed, 1.6, false, plotter.NoStep}, series{"other errors", other, colGray, 1.6, false, plotter.NoStep})
}

func latencyChart(v reports.ScenarioView, xmax float64) (*chart, error) {
	p := newPlot("latency p50 / p95 / p99", "ms", xmax)
	var p50, p95, p99 plotter.XYs
	top := 1.0
	for _, s := range v.Seconds {
		if s.P99ms <= 0 && s.P50ms <= 0 {
			continue // no answered call this second
		}
		x := float64(s.T)
		p50 = append(p50, plotter.XY{X: x, Y: s.P50ms})
		p95 = append(p95, plotter.XY{X: x, Y: s.P95ms})
		p99 = append(p99, plotter.XY{X: x, Y: s.P99ms})
		top = math.Max(top, math.Max(s.P99ms, s.P95ms))
	}
	return finish(p, top, v.Events, xmax, series{"p50", p50, colBlue, 1.6, false, plotter.NoStep}, series{"p95", p95, colPurple, 1.6, false, plotter.NoStep},
		series{"p99", p99, colRed, 1.6, false, plotter.NoStep})
}
