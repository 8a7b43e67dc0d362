package controller

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/fleet"
)

func TestHPAPods(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	eps := []fleet.Endpoint{{ID: "w1", Ready: true, Created: t0}, {ID: "w2", Ready: false, Created: t0.Add(time.Second)}}
	tests := []struct {
		name  string
		count int
		want  []autoscaler.HPAPod
	}{
		{"listed: Running with discovery's readiness", 2, []autoscaler.HPAPod{
			{Name: "w1", Phase: autoscaler.HPAPodRunning, Ready: true}, {Name: "w2", Phase: autoscaler.HPAPodRunning}}},
		{"unlisted: Pending", 4, []autoscaler.HPAPod{
			{Name: "w1", Phase: autoscaler.HPAPodRunning, Ready: true}, {Name: "w2", Phase: autoscaler.HPAPodRunning},
			{Name: "pending-1", Phase: autoscaler.HPAPodPending}, {Name: "pending-2", Phase: autoscaler.HPAPodPending}}},
		{"more listed than the count (scaling down)", 1, []autoscaler.HPAPod{
			{Name: "w1", Phase: autoscaler.HPAPodRunning, Ready: true}, {Name: "w2", Phase: autoscaler.HPAPodRunning}}},
	}
	for _, tc := range tests {
		if got := hpaPods(eps, tc.count); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestHPAVictims(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	eps := []fleet.Endpoint{
		{ID: "old-unready", Created: t0}, {ID: "ready", Ready: true, Created: t0.Add(time.Second)},
		{ID: "new-unready", Created: t0.Add(2 * time.Second)},
	}
	tests := []struct {
		n    int
		want []string
	}{{0, nil}, {1, []string{"new-unready"}}, {2, []string{"new-unready", "old-unready"}}, {3, []string{"new-unready", "old-unready"}}}
	for _, tc := range tests {
		if got := hpaVictims(eps, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("n=%d: %v, want %v", tc.n, got, tc.want)
		}
	}
}

func TestReadingSignal(t *testing.T) {
	tests := []struct {
		name    string
		r       autoscaler.HPAMetricReading
		want    float64
		wantErr string
	}{
		{"sum", autoscaler.HPAMetricReading{Values: []float64{1.5, 2}}, 3.5, ""},
		{"error", autoscaler.HPAMetricReading{Err: "boom", Values: []float64{1}}, 0, "boom"},
		{"no series", autoscaler.HPAMetricReading{}, 0, "no series"},
		{"NaN", autoscaler.HPAMetricReading{Values: []float64{1, math.NaN()}}, 0, "value NaN"},
		{"-Inf", autoscaler.HPAMetricReading{Values: []float64{math.Inf(-1)}}, 0, "value -Inf"},
	}
	for _, tc := range tests {
		v, err := readingSignal(tc.r)
		if err != tc.wantErr || (err == "" && (v == nil || *v != tc.want)) || (err != "" && v != nil) {
			t.Errorf("%s: %v %q, want %v %q", tc.name, v, err, tc.want, tc.wantErr)
		}
	}
}

func TestQueryTimeout(t *testing.T) {
	for poll, want := range map[time.Duration]time.Duration{
		100 * time.Millisecond: time.Second, 3 * time.Second: 3 * time.Second, time.Minute: 10 * time.Second,
	} {
		if got := queryTimeout(poll); got != want {
			t.Errorf("poll %s: %s, want %s", poll, got, want)
		}
	}
}

func TestExpandQuery(t *testing.T) {
	h := &HPASpec{Query: `sum(x{namespace="%s",g="$group",z="$zone"}) + y{n="%s"}`}
	want := `sum(x{namespace="g1",g="g1",z="a"}) + y{n="g1"}`
	if got := h.ExpandQuery("g1", "a"); got != want {
		t.Fatalf("%s, want %s", got, want)
	}
	if got := (*HPASpec)(nil).PollingInterval(); got != DefaultPollingInterval {
		t.Fatalf("nil spec polling %s", got)
	}
}

func TestPrometheusValues(t *testing.T) {
	vec := model.Vector{{Value: 1}, {Value: 2.5}}
	if got, err := Values(vec); err != nil || !slices.Equal(got, []float64{1, 2.5}) {
		t.Errorf("vector: %v %v", got, err)
	}
	if got, err := Values(model.Vector{}); err != nil || len(got) != 0 {
		t.Errorf("empty vector: %v %v", got, err)
	}
	if got, err := Values(&model.Scalar{Value: 7}); err != nil || !slices.Equal(got, []float64{7}) {
		t.Errorf("scalar: %v %v", got, err)
	}
	if _, err := Values(model.Matrix{}); err == nil {
		t.Error("a range vector must be an error")
	}
	if _, err := Values(&model.String{Value: "x"}); err == nil {
		t.Error("a string must be an error")
	}
}

// TestConfigBoundsByMaxCount: the policy never runs above max_count.
func TestConfigBoundsByMaxCount(t *testing.T) {
	h, err := resolveHPA(HPASpec{Query: "q", Threshold: 2, MinReplicas: ptr(4), MaxReplicas: ptr(6)}, 8)
	if err != nil {
		t.Fatal(err)
	}
	for maxCount, want := range map[int][2]int{8: {4, 6}, 5: {4, 5}, 3: {3, 3}} {
		cfg := hpaConfig(h, maxCount)
		if cfg.MinReplicas != want[0] || cfg.MaxReplicas != want[1] {
			t.Errorf("max_count %d: min %d max %d, want %v", maxCount, cfg.MinReplicas, cfg.MaxReplicas, want)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("max_count %d: %v", maxCount, err)
		}
	}
}
