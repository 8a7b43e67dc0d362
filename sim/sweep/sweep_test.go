package sweep

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/sim"
)

func TestParseAxis(t *testing.T) {
	base := sim.NewConfig(scenarios.Quick())
	for _, tc := range []struct {
		in, want string
		n        int
	}{
		{"up_cooldown=0s,15s,30s", "", 3},
		{"interval= 10s , 20s ", "", 2},
		{"target_rps=25,50", "", 2},
		{"nope=1,2", `unknown setting "nope"`, 0},
		{"up_cooldown=0s,soon", `up_cooldown="soon"`, 0},
		{"up_cooldown", "want key=value", 0},
		{"up_cooldown=", "no values", 0},
	} {
		t.Run(tc.in, func(t *testing.T) {
			a, err := ParseAxis(tc.in, base)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want %q", err, tc.want)
			case tc.want == "" && len(a.Values) != tc.n:
				t.Fatalf("%d values, want %d", len(a.Values), tc.n)
			}
		})
	}
}

// TestSweep: a 2 × 2 grid on the quick profile. A longer up cooldown
// delays the time to max; the page holds one heatmap per metric and a row
// per point.
func TestSweep(t *testing.T) {
	base := sim.NewConfig(scenarios.Quick())
	base.Scenarios = []string{"sustained"}
	var axes []Axis
	for _, s := range []string{"up_cooldown=0s,12s", "interval=1s,2s"} {
		a, err := ParseAxis(s, base)
		if err != nil {
			t.Fatal(err)
		}
		axes = append(axes, a)
	}
	res, err := Run(context.Background(), base, axes, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 4 {
		t.Fatalf("%d points, want 4", len(res.Points))
	}
	for _, p := range res.Points {
		if p.Err != "" || !p.Passed || p.Metrics.UpToMaxS <= 0 {
			t.Fatalf("point %v: %+v", p.Values, p)
		}
	}
	// points: (0s,1s) (0s,2s) (12s,1s) (12s,2s)
	for i := range 2 {
		if fast, slow := res.Points[i].Metrics.UpToMaxS, res.Points[2+i].Metrics.UpToMaxS; slow <= fast {
			t.Errorf("interval %s: up cooldown 12s reached max at %v s, not later than 0s at %v s", res.Points[i].Values[1], slow, fast)
		}
	}
	var html bytes.Buffer
	if err := res.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	if n := strings.Count(page, "<svg"); n != 4 {
		t.Errorf("%d heatmaps, want 4", n)
	}
	if strings.Contains(page, "http://") && !strings.Contains(page, "http://www.w3.org") {
		t.Error("the page refers to something outside itself")
	}
	if n := strings.Count(page, "<tr>"); n != 1+4 {
		t.Errorf("%d table rows, want 5 (head + 4 points)", n)
	}
	var tbl bytes.Buffer
	if err := res.WriteTable(&tbl); err != nil || strings.Count(tbl.String(), "\n") != 5 {
		t.Errorf("text table: %v\n%s", err, tbl.String())
	}
}

// TestSweepShapes: one axis is one row of heatmaps; a third axis makes one
// group of heatmaps per value.
func TestSweepShapes(t *testing.T) {
	base := sim.NewConfig(scenarios.Quick())
	base.Scenarios = []string{"burst"}
	for _, tc := range []struct {
		axes   []string
		points int
		svgs   int
	}{
		{[]string{"down_cooldown=6s,12s,24s"}, 3, 4},
		{[]string{"up_cooldown=0s,3s", "interval=2s", "seed=1,2"}, 4, 8},
	} {
		var axes []Axis
		for _, s := range tc.axes {
			a, err := ParseAxis(s, base)
			if err != nil {
				t.Fatal(err)
			}
			axes = append(axes, a)
		}
		res, err := Run(context.Background(), base, axes, 1)
		if err != nil {
			t.Fatal(err)
		}
		var html bytes.Buffer
		if err := res.WriteHTML(&html); err != nil {
			t.Fatal(err)
		}
		if len(res.Points) != tc.points || strings.Count(html.String(), "<svg") != tc.svgs {
			t.Errorf("%v: %d points, %d charts; want %d, %d", tc.axes, len(res.Points), strings.Count(html.String(), "<svg"), tc.points, tc.svgs)
		}
	}
}
