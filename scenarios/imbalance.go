package scenarios

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// Reading the workers' in-flight for the imbalance flag (reports.Imbalance):
// once a second while one of the scenario's loads runs, each read bounded.
const (
	inflightEvery   = time.Second
	inflightTimeout = 500 * time.Millisecond
	inflightMaxS    = 6 * 60 * 60 // at most this many ticks (6 h) per scenario
)

// inflightWatch reads the in-flight of every ready worker of a scenario's
// zone from the worker's own /metrics (scaleproof_worker_inflight and
// scaleproof_worker_inflight_limit) once every inflightEvery while a load of
// the scenario runs. It reads only workers the platform lists at a loopback
// Addr (local) or reads for the harness (Worker.Proxied: kind and the
// clouds, through the API server's proxy to the pod); on a platform that
// lists none (external) it ends at once and the verdict has no imbalance.
type inflightWatch struct {
	stop  func() // ends run (goUntilStopped)
	mu    sync.Mutex
	secs  []reports.InFlightSecond
	reads []workerRead // every worker read, in order (steprounds.go)
}

// workerRead is one read of a worker's /metrics: between Before and After
// the worker reported these values.
type workerRead struct {
	ID            string
	Before, After time.Time
	m             workerMetrics
}

// startInflightWatch starts the scope's watch (once; a no-op when the
// platform offers no fault actions).
func (s *Scope) startInflightWatch(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watch != nil || s.env.Faults == nil {
		return
	}
	w := &inflightWatch{}
	w.stop = goUntilStopped(context.WithoutCancel(ctx), func(ctx context.Context) { w.run(ctx, s, inflightEvery, inflightMaxS) })
	s.watch = w
}

// stopInflightWatch ends the watch and judges what it read (nil when it
// read nothing).
func (s *Scope) stopInflightWatch() *reports.Imbalance {
	s.mu.Lock()
	w := s.watch
	s.mu.Unlock()
	if w == nil {
		return nil
	}
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	return reports.JudgeImbalance(w.secs)
}

// loadRunning reports whether one of the scope's loads has not ended yet.
func (s *Scope) loadRunning() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.loads, func(l *loadRun) bool { return !l.Done() })
}

// run ticks every `every`, at most maxTicks times, until ctx ends.
func (w *inflightWatch) run(ctx context.Context, s *Scope, every time.Duration, maxTicks int) {
	t := time.NewTicker(every)
	defer t.Stop()
	for i := 0; i < maxTicks; i++ {
		select {
		case <-ctx.Done():
			return
		case at := <-t.C:
			if !s.loadRunning() {
				continue
			}
			sec, reads, stop := readInFlight(ctx, s)
			if stop {
				return
			}
			w.mu.Lock()
			w.reads = append(w.reads, reads...)
			if len(sec.Workers) > 0 {
				sec.T = s.Since(at)
				w.secs = append(w.secs, sec)
			}
			w.mu.Unlock()
		}
	}
}

// readInFlight lists the zone's workers and reads each ready one's
// in-flight at once, all bounded by inflightTimeout. A
// worker that does not answer is left out of the second. stop is true when
// the platform cannot list workers or lists them without an address.
func readInFlight(ctx context.Context, s *Scope) (sec reports.InFlightSecond, reads []workerRead, stop bool) {
	e := s.env
	ctx, cancel := context.WithTimeout(ctx, inflightTimeout)
	defer cancel()
	ws, err := e.Faults.Workers(ctx, e.Endpoints.Group, s.Zone)
	var no *platform.NotOfferedError
	if errors.As(err, &no) {
		return sec, nil, true
	}
	if err != nil {
		return sec, nil, false
	}
	var ready []platform.Worker
	addrs := 0
	for _, w := range ws {
		if readable(w) {
			addrs++
		}
		// a worker at a loopback address, or one the platform reads for
		// the harness (a pod the run deployed): never another host
		if w.Ready && (loopbackAddr(w.Addr) || w.Addr == "" && w.Proxied) {
			ready = append(ready, w)
		}
	}
	if len(ws) > 0 && addrs == 0 {
		return sec, nil, true
	}
	got := make([]*workerRead, len(ready))
	var wg sync.WaitGroup
	for i, w := range ready {
		wg.Add(1)
		go func() {
			defer wg.Done()
			before := time.Now()
			if m, err := e.readWorker(ctx, s.Zone, w); err == nil {
				got[i] = &workerRead{ID: w.ID, Before: before, After: time.Now(), m: m}
			}
		}()
	}
	wg.Wait()
	for _, g := range got {
		if g != nil {
			sec.Workers = append(sec.Workers, reports.WorkerInFlight{ID: g.ID, InFlight: g.m.InFlight, Limit: g.m.Limit})
			reads = append(reads, *g)
		}
	}
	return sec, reads, false
}

// workerReads returns every worker read of the scope's watch so far.
func (s *Scope) workerReads() []workerRead {
	s.mu.Lock()
	w := s.watch
	s.mu.Unlock()
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.reads)
}

// loopbackAddr reports whether host:port names a loopback address
// (127.0.0.0/8, ::1 or localhost): the only workers the watch reads.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
