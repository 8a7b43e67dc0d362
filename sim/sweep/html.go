package sweep

import (
	"fmt"
	"html/template"
	"image/color"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/palette/brewer"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/scaleproof/scaleproof/reports/render"
	"github.com/scaleproof/scaleproof/sim"
)

// metric is one heatmap's quantity.
type metric struct {
	title, unit string
	get         func(Metrics) float64
}

var metrics = []metric{
	{"Time to max (sustained)", "s", func(m Metrics) float64 { return m.UpToMaxS }},
	{"Back to 1 (sustained)", "s", func(m Metrics) float64 { return m.BackTo1S }},
	{"429 share of all calls", "%", func(m Metrics) float64 { return m.Pct429 }},
	{"Cost: replica-seconds", "replica-s", func(m Metrics) float64 { return m.ReplicaS }},
}

// grid is one heatmap: x the first axis, y the second (one row when there
// is one axis), at fixed values of the others.
type grid struct {
	nx, ny int
	z      []float64 // z[y*nx+x], NaN: never or failed
}

func (g grid) Dims() (c, r int)   { return g.nx, g.ny }
func (g grid) Z(c, r int) float64 { return g.z[r*g.nx+c] }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64    { return float64(r) }

type panel struct {
	Title string
	SVG   template.HTML
}

type group struct {
	Fixed  string // the other axes' values
	Panels []panel
}

// heatmaps renders one group of heatmaps per combination of the axes after
// the first two.
func (r *Result) heatmaps() ([]group, error) {
	ax := r.Axes[0]
	var ay *Axis
	if len(r.Axes) > 1 {
		ay = &r.Axes[1]
	}
	nx, ny := len(ax.Values), 1
	if ay != nil {
		ny = len(ay.Values)
	}
	per := nx * ny
	var out []group
	for start := 0; start < len(r.Points); start += per {
		pts := r.Points[start : start+per]
		g := group{}
		if len(r.Axes) > 2 {
			var fixed []string
			for k := 2; k < len(r.Axes); k++ {
				fixed = append(fixed, r.Axes[k].Key+"="+pts[0].Values[k])
			}
			g.Fixed = strings.Join(fixed, ", ")
		}
		for _, m := range metrics {
			gr := grid{nx: nx, ny: ny, z: make([]float64, per)}
			labels := plotter.XYLabels{}
			for i, p := range pts {
				// points: x is axis 0 (slow), y axis 1 (fast)
				x, y := i/ny, i%ny
				v := m.get(p.Metrics)
				text := fmt.Sprintf("%.0f", v)
				if m.unit == "%" {
					text = fmt.Sprintf("%.1f", v)
				}
				if p.Err != "" || v < 0 {
					v, text = math.NaN(), "never"
					if p.Err != "" {
						text = "error"
					}
				}
				gr.z[y*nx+x] = v
				labels.XYs = append(labels.XYs, plotter.XY{X: float64(x), Y: float64(y)})
				labels.Labels = append(labels.Labels, text)
			}
			svg, err := heatmapSVG(m.title+" ("+m.unit+", lower is better)", ax, ay, gr, labels)
			if err != nil {
				return nil, err
			}
			g.Panels = append(g.Panels, panel{Title: m.title, SVG: template.HTML(svg)})
		}
		out = append(out, g)
	}
	return out, nil
}

func sans(size vg.Length) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
}

func heatmapSVG(title string, ax Axis, ay *Axis, g grid, labels plotter.XYLabels) (string, error) {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = sans(11)
	p.X.Label.Text = ax.Key
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(10)
		a.Tick.Label.Font = sans(9)
	}
	ticks := func(vals []string) plot.ConstantTicks {
		var t plot.ConstantTicks
		for i, v := range vals {
			t = append(t, plot.Tick{Value: float64(i), Label: v})
		}
		return t
	}
	p.X.Tick.Marker = ticks(ax.Values)
	if ay != nil {
		p.Y.Label.Text = ay.Key
		p.Y.Tick.Marker = ticks(ay.Values)
	} else {
		p.Y.Tick.Marker = plot.ConstantTicks{}
	}
	pal, err := brewer.GetPalette(brewer.TypeSequential, "YlOrRd", 9)
	if err != nil {
		return "", err
	}
	h := plotter.NewHeatMap(g, pal)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, z := range g.z {
		if !math.IsNaN(z) {
			lo, hi = math.Min(lo, z), math.Max(hi, z)
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 1
	}
	if hi <= lo {
		hi = lo + 1
	}
	h.Min, h.Max = lo, hi
	h.NaN = color.RGBA{200, 200, 200, 255}
	p.Add(h)
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return "", err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font = sans(9)
		l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
		xy := labels.XYs[i]
		if z := g.Z(int(xy.X), int(xy.Y)); !math.IsNaN(z) && z > lo+0.6*(hi-lo) {
			l.TextStyle[i].Color = color.White // readable on the dark end of the palette
		}
	}
	p.Add(l)
	w := vg.Length(math.Max(3.2, 0.9*float64(g.nx)+1.2)) * vg.Inch
	hgt := vg.Length(math.Max(1.6, 0.55*float64(g.ny)+1.1)) * vg.Inch
	cv := vgsvg.New(w, hgt)
	p.Draw(draw.New(cv))
	return render.InlineSVG(cv)
}

var page = template.Must(template.New("sweep").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>scaleproof sim sweep</title>
<style>
body{font-family:sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;font-size:14px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}.fail{color:#b00}.maps{display:flex;flex-wrap:wrap;gap:1em}.maps svg{max-width:100%;height:auto}
</style></head><body>
<h1>Sweep: {{.Keys}}</h1>
<p>{{.N}} simulated runs of {{.What}} in {{.Wall}} (profile {{.Profile}}, policy {{.Policy}}, seed {{.Seed}}).
Times are from the sustained scenario's start; 429 % and replica-seconds are over every scenario. Grey: never reached, or the run failed.</p>
{{range .Groups}}{{if .Fixed}}<h2>{{.Fixed}}</h2>{{end}}<div class="maps">{{range .Panels}}<figure>{{.SVG}}</figure>{{end}}</div>{{end}}
<h2>Every point</h2>
<table><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr{{if .Fail}} class="fail"{{end}}>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
<p>Settings of every run: {{.Settings}}</p>
</body></html>
`))

// WriteHTML writes the sweep as one self-contained page.
func (r *Result) WriteHTML(w io.Writer) error {
	groups, err := r.heatmaps()
	if err != nil {
		return err
	}
	type row struct {
		Cells []string
		Fail  bool
	}
	var keys, head []string
	for _, a := range r.Axes {
		keys = append(keys, a.Key)
		head = append(head, a.Key)
	}
	head = append(head, "up to max", "back to 1", "429 %", "replica-s", "passed")
	var rows []row
	for _, p := range r.Points {
		c := append([]string(nil), p.Values...)
		if p.Err != "" {
			c = append(c, "error: "+p.Err, "", "", "", "no")
		} else {
			c = append(c, sim.Secs(p.Metrics.UpToMaxS), sim.Secs(p.Metrics.BackTo1S), fmt.Sprintf("%.2f", p.Metrics.Pct429),
				fmt.Sprintf("%.0f", p.Metrics.ReplicaS), yes(p.Passed))
		}
		rows = append(rows, row{Cells: c, Fail: p.Err != "" || !p.Passed})
	}
	what := "the five scenarios"
	if len(r.Scenarios) > 0 {
		what = strings.Join(r.Scenarios, ", ")
	}
	var set []string
	st := r.Base.Settings()
	for _, k := range slices.Sorted(maps.Keys(st)) {
		set = append(set, k+"="+st[k])
	}
	return page.Execute(w, map[string]any{
		"Keys": strings.Join(keys, " × "), "N": len(r.Points), "What": what, "Wall": r.Wall.Round(1e6).String(),
		"Profile": r.Base.Profile.Name, "Policy": r.Base.Policy, "Seed": r.Base.Seed,
		"Groups": groups, "Head": head, "Rows": rows, "Settings": strings.Join(set, ", "),
	})
}
