package render

import (
	"fmt"
	"io"
	"strconv"

	"github.com/scaleproof/scaleproof/reports"
)

var timelineHeader = []string{"t (s)", "VUs", "in flight", "count", "ready", "desired", "min", "max", "metric"}

// timelineRows renders points as table cells, one point in every `every`
// (1 or less: all); the last point is always kept.
func timelineRows(points []reports.TimelinePoint, every int) [][]string {
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
func WriteTimeline(w io.Writer, points []reports.TimelinePoint, every int, markdown bool) error {
	if len(points) == 0 {
		_, err := fmt.Fprintln(w, "(no timeline)")
		return err
	}
	rows := timelineRows(points, every)
	return writeTable(w, markdown, timelineHeader, rows)
}

// timelineEvery thins a long timeline for the reports to about 60 rows.
func timelineEvery(points []reports.TimelinePoint) int { return max(1, (len(points)+59)/60) }

func timelineEveryNote(points []reports.TimelinePoint) string {
	if n := timelineEvery(points); n > 1 {
		return fmt.Sprintf("%d samples", n)
	}
	return "sample"
}
