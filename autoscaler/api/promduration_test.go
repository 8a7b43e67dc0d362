package api

import (
	"testing"
	"time"
)

func TestPromDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{time.Second: "1s", 1500 * time.Millisecond: "1500ms", 2 * time.Minute: "120s", 0: "1ms"} {
		if got := PromDuration(d); got != want {
			t.Errorf("%s: %s, want %s", d, got, want)
		}
	}
}
