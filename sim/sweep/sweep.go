// Package sweep runs a simulated run (package sim) over a grid of settings
// and renders the grid: a table and heatmaps of time to max, back to 1,
// 429 % and replica-seconds, in one self-contained HTML page (inline SVG,
// no script, nothing fetched at view time).
package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/scaleproof/scaleproof/sim"
)

// Axis is one swept setting and its values, as given: "up_cooldown=0s,30s".
type Axis struct {
	Key    string
	Values []string
}

// ParseAxis reads "key=v1,v2,..." and checks every value against base (a
// bad key or value is an error naming it).
func ParseAxis(s string, base sim.Config) (Axis, error) {
	k, v, err := sim.ParseAssignment(s)
	if err != nil {
		return Axis{}, fmt.Errorf("--sweep %w", err)
	}
	a := Axis{Key: k}
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x == "" {
			continue
		}
		c := base
		if err := c.Set(k, x); err != nil {
			return Axis{}, fmt.Errorf("--sweep %w", err)
		}
		a.Values = append(a.Values, x)
	}
	if len(a.Values) == 0 {
		return Axis{}, fmt.Errorf("--sweep %s: no values (want %s=v1,v2,...)", k, k)
	}
	return a, nil
}

// MaxPoints bounds a grid.
const MaxPoints = 400

// Metrics are what a sweep shows of one run. Times are in seconds from the
// sustained scenario's start (-1: never, or sustained did not run).
type Metrics struct {
	UpToMaxS float64 `json:"up_to_max_s"`
	BackTo1S float64 `json:"back_to_1_s"`
	Pct429   float64 `json:"pct_429"`   // 429s over all calls of every scenario, %
	ReplicaS float64 `json:"replica_s"` // replica-seconds over every scenario
}

// Of reads a report's metrics.
func Of(rep *sim.Report) Metrics {
	m := Metrics{UpToMaxS: -1, BackTo1S: -1}
	if o, ok := rep.Outcome("sustained"); ok {
		m.UpToMaxS, m.BackTo1S = o.UpToMaxS, o.BackTo1S
	}
	var tooMany, total int64
	for _, o := range rep.Outcomes {
		tooMany += o.Calls.TooMany
		total += o.Calls.Total()
		m.ReplicaS += o.ReplicaS
	}
	if total > 0 {
		m.Pct429 = 100 * float64(tooMany) / float64(total)
	}
	return m
}

// Point is one run of the grid.
type Point struct {
	Values  []string `json:"values"` // one per axis
	Metrics Metrics  `json:"metrics"`
	Passed  bool     `json:"passed"`
	Err     string   `json:"error,omitempty"`
}

// Result is a finished sweep.
type Result struct {
	Axes      []Axis
	Points    []Point // the grid, last axis fastest
	Base      sim.Config
	Wall      time.Duration
	Scenarios []string
}

// Run runs base once per point of the grid, parallel runs at a time (<= 0:
// GOMAXPROCS). Each point is seeded alike, so points differ by their
// settings only.
func Run(ctx context.Context, base sim.Config, axes []Axis, parallel int) (*Result, error) {
	if len(axes) == 0 {
		return nil, errors.New("sweep: no axis")
	}
	n := 1
	for _, a := range axes {
		n *= len(a.Values)
		if n > MaxPoints {
			return nil, fmt.Errorf("sweep: over %d points; sweep fewer values", MaxPoints)
		}
	}
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	start := time.Now()
	res := &Result{Axes: axes, Points: make([]Point, n), Base: base, Scenarios: base.Scenarios}
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(parallel, n) {
		wg.Go(func() {
			for i := range work {
				res.Points[i] = runPoint(ctx, base, axes, i)
			}
		})
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	res.Wall = time.Since(start)
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("sweep: %w", err)
	}
	return res, nil
}

// values is point i's value per axis, the last axis fastest.
func values(axes []Axis, i int) []string {
	out := make([]string, len(axes))
	for k := len(axes) - 1; k >= 0; k-- {
		n := len(axes[k].Values)
		out[k] = axes[k].Values[i%n]
		i /= n
	}
	return out
}

func runPoint(ctx context.Context, base sim.Config, axes []Axis, i int) Point {
	p := Point{Values: values(axes, i)}
	c := base
	for k, a := range axes {
		if err := c.Set(a.Key, p.Values[k]); err != nil {
			p.Err = err.Error()
			return p
		}
	}
	rep, err := sim.Run(ctx, c)
	if err != nil {
		p.Err = err.Error()
		return p
	}
	p.Metrics, p.Passed = Of(rep), rep.Row.Passed
	return p
}

// WriteTable writes the grid as an aligned text table.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := make([]string, 0, len(r.Axes)+5)
	for _, a := range r.Axes {
		head = append(head, a.Key)
	}
	head = append(head, "up to max", "back to 1", "429 %", "replica-s", "passed")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, p := range r.Points {
		row := append([]string(nil), p.Values...)
		if p.Err != "" {
			row = append(row, "error: "+p.Err)
		} else {
			row = append(row, sim.Secs(p.Metrics.UpToMaxS), sim.Secs(p.Metrics.BackTo1S),
				fmt.Sprintf("%.2f", p.Metrics.Pct429), fmt.Sprintf("%.0f", p.Metrics.ReplicaS), yes(p.Passed))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
