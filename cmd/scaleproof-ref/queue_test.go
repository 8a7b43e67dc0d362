package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/scheduler"
)

// TestQueueFlags: the scheduler's and querier's flags are checked before
// anything starts; a bad value is a usage error naming the flag.
func TestQueueFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"querier without scheduler", []string{"querier"}, "--scheduler"},
		{"querier scheduler not a URL", []string{"querier", "--scheduler", "scaleproof-scheduler:8080"}, "--scheduler"},
		{"querier no workers", []string{"querier", "--scheduler", "http://127.0.0.1:1", "--workers", "0"}, "--workers 0"},
		{"querier bad work", []string{"querier", "--scheduler", "http://127.0.0.1:1", "--work-ms", "-1"}, "--work-ms"},
		{"querier negative cpu", []string{"querier", "--scheduler", "http://127.0.0.1:1", "--cpu-per-call", "-1"}, "--cpu-per-call -1"},
		{"querier cpu over a core", []string{"querier", "--scheduler", "http://127.0.0.1:1", "--cpu-per-call", "1001"}, "want 0..1000 millicores"},
		{"querier bad id", []string{"querier", "--scheduler", "http://127.0.0.1:1", "--id", "a b"}, "--id"},
		{"querier argument", []string{"querier", "extra"}, "no arguments"},
		{"scheduler empty queue", []string{"scheduler", "--max-queue", "0"}, "--max-queue 0"},
		{"scheduler short window", []string{"scheduler", "--window", "10ms"}, "--window"},
		{"scheduler no drain", []string{"scheduler", "--drain", "0s"}, "--drain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newQuerierCmd()
			if tc.args[0] == "scheduler" {
				cmd = newSchedulerCmd()
			}
			cmd.SetArgs(tc.args[1:])
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.Execute()
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a usage error naming %q", err, tc.want)
			}
		})
	}
}

// TestQuerierDrainsOnStop: the querier subcommand's stop (what SIGTERM
// does through serve.Run) lets the running call finish and be answered,
// then it returns nil; the call is not cut.
func TestQuerierDrainsOnStop(t *testing.T) {
	s := scheduler.New(scheduler.Config{})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); srv.Close() })
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runQuerier(ctx, querierFlags{listen: "127.0.0.1:0", schedulerURL: srv.URL, id: "qa", workers: 6, workMS: 200, drain: 20 * time.Second})
	}()
	answer := make(chan string, 1)
	go func() {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","arguments":{"ms":400}}}`
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answer <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answer <- string(b)
	}()
	waitStats(t, s, "the call on the querier", func(st scheduler.Stats) bool { return st.Running == 1 })
	stop() // SIGTERM
	select {
	case a := <-answer:
		if !strings.Contains(a, "worked 400 ms on qa") {
			t.Fatalf("the call running at SIGTERM: %s, want it finished", a)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no answer 20 s after the stop")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("runQuerier = %v, want nil after a drain", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("runQuerier still running 20 s after the stop")
	}
	waitStats(t, s, "the session ended with nothing re-queued", func(st scheduler.Stats) bool { return st.Queriers == 0 && st.Requeued == 0 })
}

// waitStats waits on the scheduler's Changed (never sleeping) until cond holds, at most 10 s.
func waitStats(t *testing.T, s *scheduler.Scheduler, what string, cond func(scheduler.Stats) bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		ch := s.Changed()
		st := s.Stats()
		if cond(st) {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("waited 10 s for %s; state %+v", what, st)
		}
	}
}
