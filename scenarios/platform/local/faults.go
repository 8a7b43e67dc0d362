package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/platform"
)

var _ platform.Faulter = (*Local)(nil)

// Workers lists a zone's workers as the fleet lists them (its endpoints),
// oldest first.
func (l *Local) Workers(_ context.Context, group, zone string) ([]platform.Worker, error) {
	if l.fleet == nil {
		return nil, fmt.Errorf("local: not up")
	}
	z := l.fleet.Zone(group, zone)
	out := make([]platform.Worker, 0, len(z.Endpoints))
	for _, ep := range z.Endpoints {
		out = append(out, platform.Worker{ID: ep.ID, Addr: ep.Addr, Ready: ep.Ready, Canary: ep.Canary})
	}
	return out, nil
}

// Freeze sends SIGSTOP to a listed worker of the zone: it keeps its
// connections and its place in the endpoints until the readiness probe
// fails, and answers nothing until Thaw.
func (l *Local) Freeze(_ context.Context, group, zone, id string) error {
	w, err := l.zoneWorker(group, zone, id)
	if err != nil {
		return err
	}
	if err := w.p.signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("local: freeze %s: %w", id, err)
	}
	// kill(2) returns before the target has stopped: a thread already on
	// the other CPU can still answer a call. Freeze returns once the kernel
	// reports the process stopped (proc(5): state T in /proc/PID/stat).
	if err := waitStopped(w.p.cmd.Process.Pid, 2*time.Second); err != nil {
		return fmt.Errorf("local: freeze %s: %w", id, err)
	}
	l.mu.Lock()
	if l.frozen == nil {
		l.frozen = map[string]*proc{}
	}
	l.frozen[id] = w.p
	l.mu.Unlock()
	return nil
}

// Thaw sends SIGCONT to a worker Freeze stopped, also one the fleet no
// longer lists (scaled away while frozen).
func (l *Local) Thaw(_ context.Context, _, _, id string) error {
	l.mu.Lock()
	p := l.frozen[id]
	delete(l.frozen, id)
	l.mu.Unlock()
	if p == nil {
		return fmt.Errorf("local: thaw %s: not frozen", id)
	}
	if err := p.signal(syscall.SIGCONT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("local: thaw %s: %w", id, err)
	}
	return nil // (a worker scaled away and killed while frozen has nothing to thaw)
}

// Kill sends SIGKILL to a listed worker of the zone; the fleet replaces it.
func (l *Local) Kill(_ context.Context, group, zone, id string) error {
	w, err := l.zoneWorker(group, zone, id)
	if err != nil {
		return err
	}
	if err := w.p.signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("local: kill %s: %w", id, err)
	}
	return nil
}

// Restart restarts the console with SIGTERM and its drain, on the same
// address and state file (see RestartConsole).
func (l *Local) Restart(ctx context.Context, part platform.Part) error {
	if part != platform.PartConsole {
		return &platform.NotOfferedError{Platform: l.Name(), Action: "restart the " + string(part),
			Reason: "only the console can be restarted"}
	}
	_, err := l.RestartConsole(ctx, false)
	return err
}

// The reference worker's readiness switch (autoscaler/worker's
// SignalFailReadiness and SignalPassReadiness, documented in
// `scaleproof-ref worker --help`), named here so the harness does not link
// the worker; TestReadinessSignals checks they are the worker's.
const (
	signalFailReadiness = syscall.SIGUSR1
	signalPassReadiness = syscall.SIGUSR2
)

// FailReadiness sends a listed worker of the zone signalFailReadiness
// (SIGUSR1): its /readyz answers 503 while /mcp keeps serving. It returns once /readyz answers 503 (bounded), with the fleet's
// probe period and failure threshold and the edge's discovery interval.
func (l *Local) FailReadiness(ctx context.Context, group, zone, id string) (platform.Readiness, error) {
	if err := l.setReadiness(ctx, group, zone, id, signalFailReadiness, http.StatusServiceUnavailable); err != nil {
		return platform.Readiness{}, err
	}
	return platform.Readiness{ProbePeriod: l.fleet.probe, FailureThreshold: probeFailureThreshold,
		RouteInterval: l.cfg.Discovery}, nil
}

// PassReadiness sends signalPassReadiness (SIGUSR2) and returns once
// the worker's /readyz answers 200 again (bounded).
func (l *Local) PassReadiness(ctx context.Context, group, zone, id string) error {
	return l.setReadiness(ctx, group, zone, id, signalPassReadiness, http.StatusOK)
}

// readinessWait bounds the wait for a signalled worker's /readyz to change.
const readinessWait = 5 * time.Second

func (l *Local) setReadiness(ctx context.Context, group, zone, id string, sig syscall.Signal, want int) error {
	w, err := l.zoneWorker(group, zone, id)
	if err != nil {
		return err
	}
	if err := w.p.signal(sig); err != nil {
		return fmt.Errorf("local: signal %s %s: %w", id, sig, err)
	}
	ctx, cancel := context.WithTimeout(ctx, readinessWait)
	defer cancel()
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	last := "no answer yet"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+w.p.addr+"/readyz", nil)
		if err != nil {
			return fmt.Errorf("local: %s /readyz: %w", id, err)
		}
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return nil
			}
			last = fmt.Sprintf("HTTP %d", resp.StatusCode)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("local: worker %s: /readyz did not answer %d within %s of %s (last %s)", id, want, readinessWait, sig, last)
		case <-t.C:
		}
	}
}

// thawAll lets every frozen worker run again (Down: a stopped process does
// not handle SIGTERM).
func (l *Local) thawAll() {
	l.mu.Lock()
	ps := l.frozen
	l.frozen = nil
	l.mu.Unlock()
	for _, p := range ps {
		_ = p.signal(syscall.SIGCONT)
	}
}

func (l *Local) zoneWorker(group, zone, id string) (*worker, error) {
	if l.fleet == nil {
		return nil, fmt.Errorf("local: not up")
	}
	w := l.fleet.worker(id)
	if w == nil {
		return nil, fmt.Errorf("local: zone %s/%s has no worker %q", group, zone, id)
	}
	return w, nil
}

// waitStopped waits until process pid is in the stopped state ("T" in the
// third field of /proc/PID/stat; proc(5)), at most timeout, reading every
// millisecond. Without /proc (not Linux) it returns at once.
func waitStopped(pid int, timeout time.Duration) error {
	path := fmt.Sprintf("/proc/%d/stat", pid)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil // no /proc, or the process is gone: nothing answers
		}
		// pid (comm) state ...: comm may hold spaces and parentheses.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't') {
			return nil
		}
		select {
		case <-deadline.C:
			return fmt.Errorf("process %d not stopped %s after SIGSTOP", pid, timeout)
		case <-tick.C:
		}
	}
}
