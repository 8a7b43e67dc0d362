package reports

import (
	"fmt"
	"io"
	"strconv"
)

// TimelinePoint is the "timeline" record: one sample of a target scenario
// (--target hpa or keda), taken every sample interval while it runs. T is
// seconds (0.1 s resolution) from the scenario's start; InFlight and VUs are
// the load generator's (calls started and not yet answered; VUs alive), 0
// when no load runs; Count, Ready, Desired, Min and Max are the target's
// reading (the Deployment's spec.replicas and status.readyReplicas, the
// HPA's status.desiredReplicas and its bounds); Metric is the autoscaler's
// own reading of its signal in the metric's unit, when HasMetric. Err is set
// when the target could not be read (the numbers are then 0).
type TimelinePoint struct {
	Scenario  string  `json:"scenario"`
	T         float64 `json:"t"`
	InFlight  int64   `json:"in_flight"`
	VUs       int     `json:"vus"`
	Count     int     `json:"count"`
	Ready     int     `json:"ready"`
	Desired   int     `json:"desired"`
	Min       int     `json:"min"`
	Max       int     `json:"max"`
	Metric    float64 `json:"metric,omitempty"`
	HasMetric bool    `json:"has_metric,omitempty"`
	Err       string  `json:"err,omitempty"`
}

// TimelineOf returns the points of one scenario, in the file's order.
func (res *Results) TimelineOf(scenario string) []TimelinePoint {
	var out []TimelinePoint
	for _, p := range res.Timeline {
		if p.Scenario == scenario {
			out = append(out, p)
		}
	}
	return out
}

var timelineHeader = []string{"t (s)", "VUs", "in flight", "count", "ready", "desired", "min", "max", "metric"}

// timelineRows renders points as table cells, one point in every `every`
// (1 or less: all); the last point is always kept.
func timelineRows(points []TimelinePoint, every int) [][]string {
	every = max(every, 1)
	var rows [][]string
	for i, p := range points {
		if i%every != 0 && i != len(points)-1 {
			continue
		}
		metric := "—"
		if p.HasMetric {
			metric = strconv.FormatFloat(p.Metric, 'f', -1, 64)
		}
		row := []string{strconv.FormatFloat(p.T, 'f', 1, 64), strconv.Itoa(p.VUs), strconv.FormatInt(p.InFlight, 10),
			strconv.Itoa(p.Count), strconv.Itoa(p.Ready), strconv.Itoa(p.Desired), strconv.Itoa(p.Min), strconv.Itoa(p.Max), metric}
		if p.Err != "" {
			row = []string{row[0], row[1], row[2], "—", "—", "—", "—", "—", "read failed: " + p.Err}
		}
		rows = append(rows, row)
	}
	return rows
}

// WriteTimeline writes a target scenario's timeline as a table (Markdown
// when markdown, else aligned text), keeping one point in every `every` (a
// 1 s timeline of a 7 minute spike is 450 rows; every 10 gives 45).
func WriteTimeline(w io.Writer, points []TimelinePoint, every int, markdown bool) error {
	if len(points) == 0 {
		_, err := fmt.Fprintln(w, "(no timeline)")
		return err
	}
	rows := timelineRows(points, every)
	if markdown {
		return writeMarkdownTable(w, timelineHeader, rows)
	}
	return writeTextTable(w, timelineHeader, rows)
}

// timelineEvery thins a long timeline for the reports to about 60 rows.
func timelineEvery(points []TimelinePoint) int { return max(1, (len(points)+59)/60) }

func timelineEveryNote(points []TimelinePoint) string {
	if n := timelineEvery(points); n > 1 {
		return fmt.Sprintf("%d samples", n)
	}
	return "sample"
}
