package steps

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestRecorder(t *testing.T) {
	clock := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	r := &Recorder{Prefix: "kind", Topic: "kind step", Out: &out, Now: func() time.Time { return clock }}
	boom := errors.New("boom")
	for _, c := range []struct {
		name string
		took time.Duration
		err  error
	}{{"create cluster", 1500 * time.Millisecond, nil}, {"load images", time.Second, boom}} {
		if err := r.Run(c.name, func() error { clock = clock.Add(c.took); return c.err }); !errors.Is(err, c.err) {
			t.Fatalf("%s: err %v, want %v", c.name, err, c.err)
		}
	}
	got := r.Steps()
	if len(got) != 2 || got[0] != (Step{"create cluster", 1500 * time.Millisecond, nil}) || got[1].Name != "load images" || !errors.Is(got[1].Err, boom) || got[1].Duration != time.Second {
		t.Fatalf("steps %+v", got)
	}
	// a failed step prints no progress line (its error is the caller's to say)
	if out.String() != "kind: create cluster in 1.5 s\n" {
		t.Fatalf("progress %q", out.String())
	}
	var zero Recorder
	if err := zero.Run("x", func() error { return nil }); err != nil || len(zero.Steps()) != 1 {
		t.Fatalf("zero recorder: %v %v", err, zero.Steps())
	}
}
