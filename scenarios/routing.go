package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/load"
	"github.com/scaleproof/scaleproof/scenarios/observe"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// The readiness-routing scenario's settings.
const (
	// routingCallMS is the length of the scenario's calls: long enough
	// that the calls per second per worker stay under the target rate (50)
	// at 44 VUs on 2 workers, short enough that the calls in flight when a
	// worker leaves the routes are done a second later.
	routingCallMS = 1000
	// routingSlack is added to the edge's discovery interval before the
	// workers' counters are judged: the edge's ticker, its fetch of the
	// listing and a call's start running late on a busy 2-core machine.
	routingSlack = time.Second
	// routingHold is how long the not-ready worker is watched for new
	// calls once the edge has had its interval and the slack to drop it.
	routingHold = 3 * time.Second
	// routingPoll is how often the zone's listing is read to see a worker
	// turn not ready, ready again, or boot.
	routingPoll = 100 * time.Millisecond
)

// ReadinessRouting: "no call goes to a worker that is not ready". A zone at
// count 2 (max 3) under a steady load of 1 s calls whose VUs start spread
// over one call's length, with in-flight at 69 % of the limit at 2 workers
// and 46 % at 3 (never low, never able to step past the max); the count is
// set to 3 under the load (or the autoscaler steps it there), and the new
// worker, booting, must get no call before the platform lists it ready. Then one
// worker's readiness fails while it still answers calls (the platform's
// FailReadiness: its /readyz turns 503, its /mcp keeps serving), as a pod
// whose readiness check fails under load; once the platform lists it not
// ready, the edge must send it no new call after one discovery interval of
// the edge (Kubernetes' readiness rule: a pod that is not ready is removed
// from the Service's endpoints, and a load balancer routes only to ready
// endpoints). Where calls went is read from the workers' own counters
// (scaleproof_worker_calls_total + scaleproof_worker_inflight on their
// /metrics: the calls each has admitted). Its readiness then passes again
// and it must get calls again; no call may fail throughout.
func ReadinessRouting() Scenario {
	return Scenario{
		Name:  "readiness-routing",
		Title: "no call goes to a worker that is not ready",
		Expected: func(p Profile, _ target.Contracts) time.Duration {
			return 2*p.BootDelay + 4*time.Second + routingSlack + routingCallMS*time.Millisecond + routingHold + 8*time.Second
		},
		Run: func(ctx context.Context, e *Env, s *Scope) error {
			if e.Policy != "" && e.Policy != PolicyStep {
				// The routing facts are the edge's, but the scenario needs a
				// count that holds still under its load.
				return &skipError{reason: fmt.Sprintf("it holds a zone at count 3 under a load the step policy neither steps up nor down from; on the %s policy the count follows the query's ratio (its 44 calls in flight over 3 replicas scale the zone in at once), and the workers it watches would leave the zone", e.Policy)}
			}
			if err := needsFaults(e, "fail a worker's readiness"); err != nil {
				return err
			}
			r := routing{e: e, s: s, f: e.faults()}
			if _, err := s.zoneAt(ctx, 3, 2); err != nil {
				return err
			}
			ws, err := r.list(ctx)
			if err != nil {
				return skip(err)
			}
			for _, w := range ws {
				if !readable(w) {
					return skip(&platform.NotOfferedError{Platform: "under test", Action: "read a worker's /metrics",
						Reason: "it gives no worker addresses"})
				}
			}
			l, err := r.bootingGetsNoCalls(ctx)
			if err != nil {
				return err
			}
			if ws, err = r.list(ctx); err != nil {
				return err
			}
			ws = countWorkers(ws)
			if len(ws) != 3 {
				return fmt.Errorf("the platform lists %d workers of a zone at count 3", len(ws))
			}
			victim, others := ws[0], ws[1:]
			rd, passAgain, err := r.notReadyGetsNoCalls(ctx, victim, others)
			if passAgain != nil {
				defer func() { _ = passAgain() }()
			}
			if err != nil {
				return err
			}
			if err := r.readyAgainGetsCalls(ctx, victim, rd, passAgain); err != nil {
				return err
			}
			l.Stop()
			l.Wait()
			c := l.Calls()
			s.Check("no call failed while a worker was not ready", failedCalls(c) == 0 && c.OK > 0, "%s", callsDetail(c))
			return l.Err()
		},
	}
}

// routing is one readiness-routing run: its zone's workers, read through
// the platform's fault actions and each worker's /metrics.
type routing struct {
	e *Env
	s *Scope
	f platform.Faulter
}

func (r routing) list(ctx context.Context) ([]platform.Worker, error) {
	return r.f.Workers(ctx, r.e.Endpoints.Group, r.s.Zone)
}

func (r routing) read(ctx context.Context, w platform.Worker) (workerMetrics, error) {
	return r.e.readWorker(ctx, r.s.Zone, w)
}

// bootingGetsNoCalls starts the scenario's load on the zone at count 2,
// brings it to 3 under the load (or waits for the autoscaler's own step to
// 3), and judges that no worker got a call while listed not ready and
// never ready before (the boot watch, from before the load starts). It
// returns the load, which runs on.
func (r routing) bootingGetsNoCalls(ctx context.Context) (*loadRun, error) {
	e, s := r.e, r.s
	bw := newBootWatch()
	stopWatch := goUntilStopped(ctx, func(ctx context.Context) { bw.run(ctx, r.list, r.read, routingPoll, 10*time.Minute) })
	defer stopWatch()

	// 44 VUs: 22 a worker at 2 (69 % of 32), 15 at 3 (46 %): never low;
	// under max × limit × 50 %, so not a load that asks the autoscaler
	// for the max (the count is set to it here).
	vus := max(e.Profile.MaxInflight*11/8, 3)
	// The VUs start spread over one call's length, so calls start all
	// the time rather than in waves a call apart (a booting worker
	// listed for less than a call's length would otherwise fall
	// between two waves and prove nothing).
	callLen := routingCallMS * time.Millisecond
	lp := load.RampingVUs(0, load.Stage{Duration: callLen, Target: vus},
		load.Stage{Duration: 5*time.Minute + 4*e.Profile.BootDelay, Target: vus})
	lp.GracefulStop = callLen + e.Profile.GracefulStop + 5*time.Second
	s.Phase(fmt.Sprintf("%d VUs of %d ms calls; count 2 → 3 under the load: the new worker gets no call before it is ready", vus, routingCallMS))
	l := s.loadWork(ctx, lp, routingCallMS)
	if err := s.Pause(ctx, callLen+2*routingPoll); err != nil {
		return l, err
	}
	// The zone's mean in-flight is over the step-up threshold at 2:
	// the autoscaler may have stepped up to 3 itself once its up
	// cooldown was over, a worker booting under the load as well.
	if z, st, err := e.Console.GetZone(ctx, e.Endpoints.Keys.SuperAdmin.Key, e.Endpoints.Group, s.Zone); err == nil && st == http.StatusOK && z.Count >= 3 {
		if _, err := s.WaitFor(ctx, "3 workers ready", 30*time.Second+4*e.Profile.BootDelay,
			func(x observe.Sample) bool { return x.Count == 3 && x.Ready >= 3 }); err != nil {
			return l, err
		}
	} else if _, err := s.forceCount(ctx, 3); err != nil {
		return l, err
	}
	// One more round of the watch after every worker is ready.
	if err := s.Pause(ctx, 2*routingPoll); err != nil {
		return l, err
	}
	stopWatch()
	seen, called := bw.result()
	s.Check("no call to a worker before it is ready", len(seen) > 0 && len(called) == 0,
		"%s; workers that got calls while listed not ready, never ready before: %v",
		describeBooting(seen), orNone(called))
	return l, nil
}

// notReadyGetsNoCalls fails victim's readiness under the load (its /readyz
// 503, its calls still served) and judges that it gets no new calls once
// the edge has re-read the listing, while the others do. passAgain
// (non-nil once the readiness failed; idempotent) passes it again; rd is
// the platform's readiness timing.
func (r routing) notReadyGetsNoCalls(ctx context.Context, victim platform.Worker, others []platform.Worker) (rd platform.Readiness, passAgain func() error, err error) {
	e, s, f := r.e, r.s, r.f
	s.Phase(fmt.Sprintf("worker %s fails its readiness under the load (/readyz 503, its calls still served)", victim.ID))
	v0, err := r.read(ctx, victim)
	if err != nil {
		return rd, nil, skip(err) // a platform that cannot read the worker (platform.MetricsReader)
	}
	if err := s.Pause(ctx, time.Second); err != nil {
		return rd, nil, err
	}
	v1, err := r.read(ctx, victim)
	if err != nil {
		return rd, nil, err
	}
	rd, err = f.FailReadiness(ctx, e.Endpoints.Group, s.Zone, victim.ID)
	if err != nil {
		return rd, nil, skip(err)
	}
	failedAt := s.Now()
	passed := false
	passAgain = func() error {
		if passed {
			return nil
		}
		passed = true
		return f.PassReadiness(context.WithoutCancel(ctx), e.Endpoints.Group, s.Zone, victim.ID)
	}
	listedAt, err := s.waitListed(ctx, r.list, victim.ID, false, rd.ListingLag()+rd.ProbePeriod+10*time.Second)
	if err != nil {
		return rd, passAgain, err
	}
	// The edge re-reads the listing within its interval; the calls it
	// sent the worker before then are done a call's length later.
	cutoff := listedAt.Add(rd.RouteInterval + routingSlack)
	if err := s.Pause(ctx, cutoff.Add(routingCallMS*time.Millisecond).Sub(s.Now())); err != nil {
		return rd, passAgain, err
	}
	va, oa, err := readAll(ctx, r.read, victim, others)
	if err != nil {
		return rd, passAgain, err
	}
	if err := s.Pause(ctx, routingHold); err != nil {
		return rd, passAgain, err
	}
	vb, ob, err := readAll(ctx, r.read, victim, others)
	if err != nil {
		return rd, passAgain, err
	}
	before := admitted(v1) - admitted(v0)
	newCalls := admitted(vb) - admitted(va)
	var othersNew float64
	for i := range others {
		othersNew += admitted(ob[i]) - admitted(oa[i])
	}
	s.Check("a worker that fails readiness gets no new calls once the edge has re-read the listing",
		before > 0 && newCalls == 0 && othersNew > 0,
		"%s took %.0f calls in the 1 s before its /readyz turned 503; listed not ready %.1f s after (the platform probes every %s, %d failures in a row); "+
			"from %.1f s after that (the edge's discovery interval %s, from the platform, + %s slack + a call's %d ms) it took %.0f new calls in %s, the other workers %.0f",
		victim.ID, before, listedAt.Sub(failedAt).Seconds(), rd.ProbePeriod, rd.FailureThreshold,
		cutoff.Add(routingCallMS*time.Millisecond).Sub(listedAt).Seconds(), rd.RouteInterval, routingSlack, routingCallMS,
		newCalls, routingHold, othersNew)
	return rd, passAgain, nil
}

// readyAgainGetsCalls passes victim's readiness again (passAgain; rd is
// the platform's readiness timing) and judges that it gets calls again
// once it is listed ready.
func (r routing) readyAgainGetsCalls(ctx context.Context, victim platform.Worker, rd platform.Readiness, passAgain func() error) error {
	s := r.s
	s.Phase(fmt.Sprintf("worker %s passes its readiness again", victim.ID))
	if err := passAgain(); err != nil {
		return err
	}
	passedAt := s.Now()
	backAt, err := s.waitListed(ctx, r.list, victim.ID, true, rd.ProbePeriod+10*time.Second)
	if err != nil {
		return err
	}
	vc, err := r.read(ctx, victim)
	if err != nil {
		return err
	}
	if err := s.Pause(ctx, rd.RouteInterval+routingSlack+time.Second); err != nil {
		return err
	}
	vd, err := r.read(ctx, victim)
	if err != nil {
		return err
	}
	again := admitted(vd) - admitted(vc)
	s.Check("a worker ready again gets calls again", again > 0,
		"%s listed ready again %.1f s after its readiness passed; %.0f calls in the %.1f s after",
		victim.ID, backAt.Sub(passedAt).Seconds(), again,
		(rd.RouteInterval + routingSlack + time.Second).Seconds())
	return nil
}

// admitted is the calls a worker has admitted: those finished and those in flight.
func admitted(m workerMetrics) float64 { return m.Calls + m.InFlight }

func readAll(ctx context.Context, read func(context.Context, platform.Worker) (workerMetrics, error),
	w platform.Worker, others []platform.Worker) (workerMetrics, []workerMetrics, error) {
	m, err := read(ctx, w)
	if err != nil {
		return m, nil, err
	}
	out := make([]workerMetrics, len(others))
	for i, o := range others {
		if out[i], err = read(ctx, o); err != nil {
			return m, nil, err
		}
	}
	return m, out, nil
}

// waitListed polls the zone's listing every routingPoll until worker id is
// listed with ready, and returns when it first saw it so. It errs when id
// is not listed any more or after timeout.
func (s *Scope) waitListed(ctx context.Context, list func(context.Context) ([]platform.Worker, error), id string, ready bool,
	timeout time.Duration) (time.Time, error) {
	start := s.Now()
	state := map[bool]string{true: "ready", false: "not ready"}
	last := "not read yet"
	for s.Now().Sub(start) < timeout {
		ws, err := list(ctx)
		now := s.Now()
		if err != nil {
			last = err.Error()
		} else {
			found := false
			for _, w := range ws {
				if w.ID == id {
					found = true
					if w.Ready == ready {
						return now, nil
					}
					last = "listed " + state[w.Ready]
				}
			}
			if !found {
				return now, fmt.Errorf("worker %s left the zone's listing while the scenario waited for it to be listed %s", id, state[ready])
			}
		}
		if err := s.Pause(ctx, routingPoll); err != nil {
			return now, err
		}
	}
	return s.Now(), fmt.Errorf("%s for worker %s to be listed %s: last %s", observe.Waited(s.Now().Sub(start), timeout, nil), id, state[ready], last)
}

// bootWatch follows the workers that join a zone's listing not ready (booting)
// until the listing says they are ready, and records any that admitted a
// call while listed not ready and never ready before. Workers listed at its
// first read are not judged (they joined before the watch).
type bootWatch struct {
	mu      sync.Mutex
	started bool
	known   map[string]bool
	booting map[string]*bootSeen
}

// bootSeen is one worker seen booting.
type bootSeen struct {
	ID       string
	First    time.Time // first listed not ready
	Ready    time.Time // first listed ready; zero while not yet
	Admitted float64   // calls it had admitted when found with calls while not ready
}

func newBootWatch() *bootWatch {
	return &bootWatch{known: map[string]bool{}, booting: map[string]*bootSeen{}}
}

// run reads the listing every `every` until ctx ends or for at most limit.
func (b *bootWatch) run(ctx context.Context, list func(context.Context) ([]platform.Worker, error),
	read func(context.Context, platform.Worker) (workerMetrics, error), every, limit time.Duration) {
	end := time.Now().Add(limit)
	observe.Every(ctx, every, func() bool {
		if !time.Now().Before(end) {
			return false
		}
		b.tick(ctx, time.Now(), list, read)
		return true
	})
}

// tick is one read: the listing, the /metrics of each booting worker, and
// for one that has admitted calls, the listing again; the worker is caught
// only when both listings, before and after its counters were read, say it
// is not ready (so a worker that turned ready in between is not).
func (b *bootWatch) tick(ctx context.Context, now time.Time, list func(context.Context) ([]platform.Worker, error),
	read func(context.Context, platform.Worker) (workerMetrics, error)) {
	ws, err := list(ctx)
	if err != nil {
		return
	}
	b.mu.Lock()
	first := !b.started
	b.started = true
	var check []platform.Worker
	for _, w := range ws {
		if !b.known[w.ID] {
			b.known[w.ID] = true
			if !first && !w.Ready {
				b.booting[w.ID] = &bootSeen{ID: w.ID, First: now}
			}
		}
		bs := b.booting[w.ID]
		if bs == nil || !bs.Ready.IsZero() {
			continue
		}
		if w.Ready {
			bs.Ready = now
			continue
		}
		if bs.Admitted == 0 { // once caught, only its ready time is still wanted
			check = append(check, w)
		}
	}
	b.mu.Unlock()
	var called []platform.Worker
	var got []float64
	for _, w := range check {
		if m, err := read(ctx, w); err == nil && admitted(m) > 0 {
			called = append(called, w)
			got = append(got, admitted(m))
		}
	}
	if len(called) == 0 {
		return
	}
	again, err := list(ctx)
	if err != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, w := range called {
		for _, x := range again {
			if x.ID == w.ID && !x.Ready {
				b.booting[w.ID].Admitted = got[i]
			}
		}
	}
}

// result returns every worker seen booting and a line for each one caught
// with calls while not ready.
func (b *bootWatch) result() (seen []bootSeen, called []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, bs := range b.booting {
		seen = append(seen, *bs)
	}
	sort.Slice(seen, func(i, j int) bool { return seen[i].First.Before(seen[j].First) })
	for _, bs := range seen {
		if bs.Admitted > 0 {
			called = append(called, fmt.Sprintf("%s had admitted %.0f calls while listed not ready", bs.ID, bs.Admitted))
		}
	}
	return seen, called
}

func describeBooting(seen []bootSeen) string {
	if len(seen) == 0 {
		return "no worker was seen booting (listed not ready when it joined the zone)"
	}
	var parts []string
	for _, bs := range seen {
		if bs.Ready.IsZero() {
			parts = append(parts, bs.ID+" not listed ready while watched")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s listed not ready for %.1f s (read every %s)", bs.ID, bs.Ready.Sub(bs.First).Seconds(), routingPoll))
	}
	return "workers seen booting: " + strings.Join(parts, ", ")
}
