package api

import (
	"strconv"
	"time"
)

// PromDuration renders d in Prometheus' duration syntax, in whole
// milliseconds (at least 1ms): "15s", "1500ms" (2m is "120s"). Sub-millisecond
// parts are dropped; zero and negative durations give "1ms". An HPASpec's
// Query writes its range with it, and the reference system's Prometheus
// configurations their intervals.
func PromDuration(d time.Duration) string {
	ms := max(d.Milliseconds(), 1)
	if ms%1000 == 0 {
		return strconv.FormatInt(ms/1000, 10) + "s"
	}
	return strconv.FormatInt(ms, 10) + "ms"
}
