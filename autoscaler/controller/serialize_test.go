package controller

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/fleet"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// blockingTarget blocks Scale until release is closed.
type blockingTarget struct{ entered, release chan struct{} }

func (b blockingTarget) Scale(context.Context, string, string, int, []string) error {
	b.entered <- struct{}{}
	<-b.release
	return nil
}

type noWorkers struct{}

func (noWorkers) Endpoints(context.Context, string, string) ([]fleet.Endpoint, error) {
	return nil, nil
}
func (noWorkers) Scrape(_ context.Context, ep fleet.Endpoint) (autoscaler.WorkerSample, error) {
	return autoscaler.WorkerSample{ID: ep.ID}, nil
}

// TestZoneLockHeldDuringScale: a forced change holds the zone's lock while
// it talks to the scale target, so a round (which takes the same lock)
// cannot interleave with it on that zone, while other zones stay free.
func TestZoneLockHeldDuringScale(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	bt := blockingTarget{entered: make(chan struct{}), release: make(chan struct{})}
	c, err := New(Options{Store: st, Target: bt, Discovery: noWorkers{}, Scraper: noWorkers{},
		Policy: StepPolicy(autoscaler.DefaultStepConfig()), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := c.SetCount(context.Background(), "root", "g", "a", 2); done <- err }()
	<-bt.entered
	e := c.lookup("g", "a")
	if e.mu.TryLock() {
		t.Fatal("zone lock free while the scale target is called")
	}
	if _, err := c.Round(context.Background(), "g", "other", "root"); err == nil {
		t.Fatal("round of an unknown zone succeeded")
	}
	close(bt.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !e.mu.TryLock() {
		t.Fatal("zone lock still held after the change")
	}
	e.mu.Unlock()
	d, err := c.Round(context.Background(), "g", "a", "root")
	if err != nil || d.Action != autoscaler.ActionHold {
		t.Fatalf("round after the change: %+v, %v", d, err)
	}
}
