package local

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/fleet"
)

// WorkerSpec is how the fleet starts one worker process.
type WorkerSpec struct {
	Bin         string        // scaleproof-ref
	LogDir      string        // per-worker logs go here
	MaxInflight int           // --max-inflight (RAMEN_MAX_INFLIGHT)
	WorkMS      int           // --work-ms default call duration
	BootDelay   time.Duration // --boot-delay before readyz turns 200
	Drain       time.Duration // --drain on SIGTERM
	// PreStop: the endpoint is removed this long before SIGTERM (a preStop
	// sleep). 0, the local platform's default, sends SIGTERM as soon as the
	// endpoint is gone, as the kubelet does without a preStop hook: the
	// worker's own drain (DrainDelay, Drain) must save its calls.
	PreStop time.Duration
	// DrainDelay is the worker's --drain-delay: after SIGTERM it keeps
	// serving this long before its drain closes the listener.
	DrainDelay time.Duration
	StartWait  time.Duration // how long a process may take to announce its address
	Faults     string        // the workers' --fault value ("" none)
	// Canary: every zone scaled to one or more workers also runs a canary
	// worker beside them (the same binary with --version canary, listed
	// with fleet.Endpoint.Canary), as a cluster runs a zone's canary
	// Deployment of one replica beside its stable one. It is not part of
	// the replicas: a scale never stops or picks it; it is replaced when it
	// exits and stopped when the zone is scaled to 0.
	Canary bool
}

// CanaryVersion is the --version of a zone's canary worker.
const CanaryVersion = "canary"

// Fleet is the local platform's stand-in for Kubernetes: it owns the worker
// processes of every group × zone (the Deployment/ReplicaSet), serves their
// scale (the scale subresource) and endpoints with readiness (EndpointSlices)
// over the fleet HTTP contract, probes /readyz of each worker every probe
// interval (the kubelet's readiness probe), and replaces a worker that exits
// on its own (the ReplicaSet), so the count never drops on a crash.
type Fleet struct {
	spec  WorkerSpec
	log   *slog.Logger
	probe time.Duration
	hc    *http.Client

	mu      sync.Mutex
	zones   map[string]*zoneProcs // key group/zone
	seq     int
	closing bool
	wg      sync.WaitGroup // background starts and stops
	sd      *fileSD        // Prometheus file_sd, kept in step (fleet_sd.go); nil: none
}

type zoneProcs struct {
	group, zone string
	replicas    int
	workers     []*worker // listed endpoints, oldest first
	pending     int       // starts under way
	canary      *worker   // the zone's canary (WorkerSpec.Canary), listed after the workers
	canaryStart bool      // the canary's start is under way
}

// all is the zone's listed workers, the canary last.
func (zp *zoneProcs) all() []*worker {
	if zp.canary == nil {
		return zp.workers
	}
	return append(slices.Clip(zp.workers), zp.canary)
}

type worker struct {
	id     string
	p      *proc
	ready  bool
	fails  int  // failed readiness probes in a row
	canary bool // the zone's canary
}

// NewFleet returns a fleet that starts workers per spec and probes readiness
// every probe interval (500 ms when zero).
func NewFleet(spec WorkerSpec, probe time.Duration, log *slog.Logger) *Fleet {
	if probe <= 0 {
		probe = 500 * time.Millisecond
	}
	if spec.StartWait <= 0 {
		spec.StartWait = 15 * time.Second
	}
	return &Fleet{spec: spec, log: log, probe: probe, zones: map[string]*zoneProcs{},
		hc: &http.Client{Timeout: 2 * time.Second}}
}

// Handler serves the fleet contract (see package autoscaler/fleet).
func (f *Fleet) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/endpoints", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"zones": f.All()})
	})
	mux.HandleFunc("GET /v1/zones/{group}/{zone}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, f.Zone(r.PathValue("group"), r.PathValue("zone")))
	})
	mux.HandleFunc("PUT /v1/zones/{group}/{zone}/scale", func(w http.ResponseWriter, r *http.Request) {
		var req fleet.ScaleRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "malformed scale request: " + err.Error()})
			return
		}
		if req.Replicas < 0 || req.Replicas > 64 {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": "replicas must be within 0..64, got " + strconv.Itoa(req.Replicas)})
			return
		}
		z, err := f.Scale(r.PathValue("group"), r.PathValue("zone"), req.Replicas, req.Victims)
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, z)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func key(g, z string) string { return g + "/" + z }

// Scale sets a zone's replicas: starts workers in the background, or removes
// workers (victims first, then the newest) from the endpoints at once and
// sends them SIGTERM after PreStop (0: at once), then waits for their drain.
func (f *Fleet) Scale(group, zone string, replicas int, victims []string) (fleet.Zone, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing {
		return fleet.Zone{}, fmt.Errorf("fleet is shutting down")
	}
	zp := f.zones[key(group, zone)]
	if zp == nil {
		zp = &zoneProcs{group: group, zone: zone}
		f.zones[key(group, zone)] = zp
	}
	zp.replicas = replicas
	f.reconcileLocked(zp, victims)
	f.reconcileCanaryLocked(zp)
	return f.zoneLocked(zp), nil
}

// reconcileCanaryLocked starts the zone's canary when it should run one
// (WorkerSpec.Canary and replicas >= 1) and has none, and stops it when it
// should not.
func (f *Fleet) reconcileCanaryLocked(zp *zoneProcs) {
	want := f.spec.Canary && zp.replicas > 0 && !f.closing
	switch {
	case want && zp.canary == nil && !zp.canaryStart:
		f.seq++
		zp.canaryStart = true
		f.wg.Add(1)
		go f.startWorker(zp, fmt.Sprintf("%s-%s-canary%d", zp.group, zp.zone, f.seq), true)
	case !want && zp.canary != nil:
		w := zp.canary
		zp.canary = nil
		f.sdChangedLocked()
		f.wg.Add(1)
		go f.stopWorker(w)
	}
}

// reconcileLocked starts or stops workers so listed + pending == replicas.
func (f *Fleet) reconcileLocked(zp *zoneProcs, victims []string) {
	have := len(zp.workers) + zp.pending
	for ; have < zp.replicas; have++ {
		f.seq++
		id := fmt.Sprintf("%s-%s-w%d", zp.group, zp.zone, f.seq)
		zp.pending++
		f.wg.Add(1)
		go f.startWorker(zp, id, false)
	}
	if have <= zp.replicas || len(zp.workers) == 0 {
		return
	}
	n := min(have-zp.replicas, len(zp.workers))
	// victims first, in the order given, then the newest
	order := make([]*worker, 0, len(zp.workers))
	for _, v := range victims {
		for _, w := range zp.workers {
			if w.id == v && !slices.Contains(order, w) {
				order = append(order, w)
			}
		}
	}
	for i := len(zp.workers) - 1; i >= 0; i-- {
		if !slices.Contains(order, zp.workers[i]) {
			order = append(order, zp.workers[i])
		}
	}
	for _, w := range order[:n] {
		zp.workers = slices.DeleteFunc(zp.workers, func(x *worker) bool { return x == w })
		f.wg.Add(1)
		go f.stopWorker(w)
	}
	f.sdChangedLocked()
}

func (f *Fleet) startWorker(zp *zoneProcs, id string, canary bool) {
	defer f.wg.Done()
	s := f.spec
	args := []string{"worker", "--listen", "127.0.0.1:0", "--id", id,
		"--max-inflight", strconv.Itoa(s.MaxInflight), "--work-ms", strconv.Itoa(s.WorkMS),
		"--boot-delay", s.BootDelay.String(), "--drain", s.Drain.String(), "--drain-delay", s.DrainDelay.String()}
	if s.Faults != "" {
		args = append(args, "--fault", s.Faults)
	}
	if canary {
		args = append(args, "--version", CanaryVersion)
	}
	p, err := startProc(context.Background(), s.Bin, s.LogDir, id, args, nil, s.StartWait)
	f.mu.Lock()
	defer f.mu.Unlock()
	if canary {
		f.canaryStartedLocked(zp, id, p, err)
		return
	}
	zp.pending--
	if err != nil {
		f.log.Error("worker start failed", "worker", id, "err", err)
		return
	}
	if f.closing || len(zp.workers)+zp.pending >= zp.replicas {
		// scaled down (or shutting down) while starting
		f.wg.Add(1)
		go f.stopWorker(&worker{id: id, p: p})
		return
	}
	w := &worker{id: id, p: p}
	zp.workers = append(zp.workers, w)
	f.sdChangedLocked()
	f.log.Info("worker started", "worker", id, "addr", p.addr)
	f.wg.Add(1)
	go f.watchExit(zp, w)
}

// canaryStartedLocked lists the zone's new canary, or stops it when the
// zone no longer wants one.
func (f *Fleet) canaryStartedLocked(zp *zoneProcs, id string, p *proc, err error) {
	zp.canaryStart = false
	if err != nil {
		f.log.Error("canary start failed", "worker", id, "err", err)
		return
	}
	w := &worker{id: id, p: p, canary: true}
	if f.closing || !f.spec.Canary || zp.replicas == 0 || zp.canary != nil {
		f.wg.Add(1)
		go f.stopWorker(w)
		return
	}
	zp.canary = w
	f.sdChangedLocked()
	f.log.Info("canary started", "worker", id, "addr", p.addr, "version", CanaryVersion)
	f.wg.Add(1)
	go f.watchExit(zp, w)
}

// watchExit replaces a worker that exits while still listed (a crash).
func (f *Fleet) watchExit(zp *zoneProcs, w *worker) {
	defer f.wg.Done()
	<-w.p.done
	f.mu.Lock()
	defer f.mu.Unlock()
	if w.canary {
		if zp.canary != w {
			return // stopped on purpose
		}
		zp.canary = nil
		f.sdChangedLocked()
		f.log.Warn("canary exited on its own; replacing it", "worker", w.id, "err", fmt.Sprint(w.p.exitErr))
		f.reconcileCanaryLocked(zp)
		return
	}
	if !slices.Contains(zp.workers, w) {
		return // removed on purpose
	}
	zp.workers = slices.DeleteFunc(zp.workers, func(x *worker) bool { return x == w })
	f.sdChangedLocked()
	f.log.Warn("worker exited on its own; replacing it", "worker", w.id, "err", fmt.Sprint(w.p.exitErr))
	if !f.closing {
		f.reconcileLocked(zp, nil)
	}
}

func (f *Fleet) stopWorker(w *worker) {
	defer f.wg.Done()
	if f.spec.PreStop > 0 {
		t := time.NewTimer(f.spec.PreStop)
		select {
		case <-t.C:
		case <-w.p.done:
		}
		t.Stop()
	}
	if err := w.p.stop(f.spec.Drain + 5*time.Second); err != nil {
		f.log.Warn("worker stop", "worker", w.id, "err", err)
	} else {
		f.log.Info("worker stopped", "worker", w.id)
	}
}

// Zone returns one zone's replicas and endpoints (replicas 0 when unknown).
func (f *Fleet) Zone(group, zone string) fleet.Zone {
	f.mu.Lock()
	defer f.mu.Unlock()
	zp := f.zones[key(group, zone)]
	if zp == nil {
		return fleet.Zone{Group: group, Zone: zone, Endpoints: []fleet.Endpoint{}}
	}
	return f.zoneLocked(zp)
}

// All lists every zone, sorted by group then zone.
func (f *Fleet) All() []fleet.Zone {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]fleet.Zone, 0, len(f.zones))
	for _, zp := range f.zones {
		out = append(out, f.zoneLocked(zp))
	}
	sort.Slice(out, func(i, j int) bool { return key(out[i].Group, out[i].Zone) < key(out[j].Group, out[j].Zone) })
	return out
}

func (f *Fleet) zoneLocked(zp *zoneProcs) fleet.Zone {
	z := fleet.Zone{Group: zp.group, Zone: zp.zone, Replicas: zp.replicas, Endpoints: make([]fleet.Endpoint, 0, len(zp.workers)+1)}
	for _, w := range zp.all() {
		z.Endpoints = append(z.Endpoints, fleet.Endpoint{ID: w.id, Addr: w.p.addr, Ready: w.ready, Created: w.p.created, Canary: w.canary})
	}
	return z
}

// Run probes every listed worker's /readyz each probe interval until ctx ends.
func (f *Fleet) Run(ctx context.Context) {
	t := time.NewTicker(f.probe)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.probeOnce(ctx)
	}
}

func (f *Fleet) probeOnce(ctx context.Context) {
	f.mu.Lock()
	var ws []*worker
	for _, zp := range f.zones {
		ws = append(ws, zp.all()...)
	}
	f.mu.Unlock()
	var wg sync.WaitGroup
	res := make([]bool, len(ws))
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = f.ready(ctx, w.p.addr)
		}()
	}
	wg.Wait()
	f.mu.Lock()
	for i, w := range ws {
		// kubelet semantics: one success makes a worker ready,
		// FailureThreshold failures in a row make it not ready, so one slow
		// answer on a busy machine does not drop the only worker.
		if res[i] {
			w.ready, w.fails = true, 0
			continue
		}
		w.fails++
		if w.fails >= probeFailureThreshold && w.ready {
			w.ready = false
			f.log.Warn("worker not ready", "worker", w.id, "failed_probes", w.fails)
		}
	}
	f.mu.Unlock()
}

// Readiness probe settings, as a pod's readinessProbe: timeoutSeconds
// (Ramen 0.7.5: "probes use a 5 s timeout"; 2 s here, where a probe is loopback) and
// failureThreshold 3 (the Kubernetes default).
const (
	probeTimeout          = 2 * time.Second
	probeFailureThreshold = 3
)

func (f *Fleet) ready(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := f.hc.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Signal sends sig to the listed worker (or canary) id.
func (f *Fleet) Signal(id string, sig syscall.Signal) error {
	w := f.worker(id)
	if w == nil {
		return fmt.Errorf("local: no worker %q", id)
	}
	return w.p.signal(sig)
}

// Worker finds a listed worker's process by ID (fault tests).
func (f *Fleet) worker(id string) *worker {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, zp := range f.zones {
		for _, w := range zp.all() {
			if w.id == id {
				return w
			}
		}
	}
	return nil
}

// Close stops every worker (drain, bounded) and waits for background work.
func (f *Fleet) Close() {
	f.mu.Lock()
	f.closing = true
	for _, zp := range f.zones {
		for _, w := range zp.all() {
			f.wg.Add(1)
			go func(w *worker) {
				defer f.wg.Done()
				if err := w.p.stop(f.spec.Drain + 5*time.Second); err != nil {
					f.log.Warn("worker stop", "worker", w.id, "err", err)
				}
			}(w)
		}
		zp.workers, zp.canary = nil, nil
	}
	f.mu.Unlock()
	f.wg.Wait()
}
