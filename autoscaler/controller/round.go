package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/fleet"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// Round runs one decision for a zone now: discover its workers, scrape them,
// ask the policy, and on UP or DOWN scale, persist, audit and log. A hold is
// kept (and persisted) as the zone's last decision but not audited. actor is
// ActorScheduler or the API key's name.
func (c *Controller) Round(ctx context.Context, group, zone, actor string) (autoscaler.Decision, error) {
	e, err := c.lock(group, zone)
	if err != nil {
		return autoscaler.Decision{}, err
	}
	defer e.mu.Unlock()
	return c.round(ctx, e, actor, true)
}

// round runs with e.mu held. persistHold: write a hold's last decision now
// (an API round) or leave it dirty for the scheduler pass to write in bulk.
func (c *Controller) round(ctx context.Context, e *zoneEntry, actor string, persistHold bool) (autoscaler.Decision, error) {
	g, zn := e.z.Group, e.z.Zone
	if d, ok, err := c.lazyMax(ctx, e, actor); ok {
		return d, err
	}
	if d, skip := c.hpaNotDue(e, actor); skip {
		return d, nil
	}
	eps, err := c.o.Discovery.Endpoints(ctx, g, zn)
	if err != nil {
		err = fmt.Errorf("round %s/%s: %w: %w", g, zn, ErrDiscovery, err)
		return autoscaler.Decision{}, err
	}
	obs := c.observe(ctx, eps)
	now := c.o.Clock.Now()
	// The count asks for stable workers; a canary is extra (never missing).
	if n := e.z.Count - stable(eps); n > 0 {
		obs.Missing = n
	}
	seen := &ZoneView{ObservedAt: now, Workers: make([]WorkerView, 0, len(obs.Workers))}
	for _, w := range obs.Workers {
		ready := w.Reachable && w.Ready && w.Limit > 0
		switch {
		case w.Canary:
		case ready:
			seen.Ready++
		case w.Starting:
			seen.Starting++
		}
		seen.Workers = append(seen.Workers, WorkerView{ID: w.ID, Canary: w.Canary, Ready: ready, Starting: w.Starting,
			Reachable: w.Reachable, InFlight: w.InFlight, Limit: w.Limit})
	}

	policy, step := c.o.Policy, true
	if p := c.zonePolicy(ctx, e, eps, now); p != nil {
		policy, step = p, false // an hpa zone (hpa_round.go)
	}
	st := e.st
	st.Count, st.Max, st.LastChange = e.z.Count, e.z.MaxCount, e.z.LastChange
	d, next := policy(st, obs, now)
	if d.At.IsZero() {
		d.At = now
	}
	d, next = c.linger(e, st, d, next)
	d.From = st.Count
	switch d.Action {
	case autoscaler.ActionUp, autoscaler.ActionDown:
		if d.To < 1 || d.To > st.Max || d.To == st.Count ||
			(d.Action == autoscaler.ActionUp) != (d.To > st.Count) {
			// A policy bug must not break the bounds: hold instead.
			c.log.Error("policy decision out of bounds, holding", "group", g, "zone", zn,
				"action", string(d.Action), "from", st.Count, "to", d.To, "max", st.Max, "reason", d.Reason)
			d = autoscaler.Decision{Action: autoscaler.ActionHold, From: st.Count, To: st.Count, At: d.At,
				Reason: fmt.Sprintf("policy decided %s to %d outside 1..%d: held", d.Action, d.To, st.Max)}
			next = st
		}
	default:
		d.Action, d.To, d.Victims = autoscaler.ActionHold, st.Count, nil
	}
	c.countDecision(d.Action)
	// A step round is kept once it took effect (a hold, or a scale that
	// landed): a failed scale changes nothing, and the next round reads
	// the samples of the round before it.
	keep := func() {
		if step {
			c.steps.record(g, zn, stepRound(actor, st, obs, d, next))
		}
	}

	if d.AtMaxUnderLoad {
		c.log.Warn("zone at max under load", "group", g, "zone", zn, "actor", actor,
			"count", st.Count, "max_count", st.Max, "reason", d.Reason)
	}

	if d.Action == autoscaler.ActionHold {
		next.Count, next.Max, next.LastChange = st.Count, st.Max, st.LastChange
		keep()
		e.st = next
		dd := d
		e.z.LastDecision = &dd
		var err error
		if persistHold {
			err = c.o.Store.SetLastDecisions([]store.ZoneDecision{{Group: g, Zone: zn, Decision: d}})
		}
		// A hold not yet stored stays dirty, and publish keeps it out of the
		// view: a pass's until Pass writes its holds, a refused one until a
		// later pass writes the zone's newest.
		e.dirty = !persistHold || err != nil
		e.publish(seen)
		c.auditHold(actor, e, d)
		if err != nil {
			return d, fmt.Errorf("round %s/%s: record hold: %w: %w", g, zn, ErrStore, err)
		}
		return d, nil
	}

	if err := c.o.Target.Scale(ctx, g, zn, d.To, d.Victims); err != nil {
		err = fmt.Errorf("round %s/%s: %s %d -> %d: %w: %w", g, zn, d.Action, d.From, d.To, ErrScale, err)
		c.log.Error("autoscale failed", "group", g, "zone", zn, "actor", actor, "action", string(d.Action),
			"from", d.From, "to", d.To, "reason", d.Reason, "err", err)
		e.publish(seen)
		return d, err
	}
	next.Count, next.Max, next.LastChange = d.To, st.Max, now
	keep()
	e.st = next
	e.z.Count, e.z.LastChange = d.To, now
	dd := d
	e.z.LastDecision, e.z.LastScale = &dd, &dd
	e.dirty = false

	tags := map[string]string{
		"action": string(d.Action), "from": itoa(d.From), "to": itoa(d.To), "reason": d.Reason,
	}
	if len(d.Victims) > 0 {
		tags["victims"] = strings.Join(d.Victims, ",")
	}
	c.log.Info("autoscale", "group", g, "zone", zn, "actor", actor, "action", string(d.Action),
		"from", d.From, "to", d.To, "reason", d.Reason)
	_, err = c.o.Store.Commit([]store.Zone{e.z}, []store.AuditEntry{{
		At: now, Actor: actor, Group: g, Zone: zn, Action: AuditAutoscale, Tags: tags,
	}})
	// the new count is shown once its audit entry is stored (as a forced
	// change's is): whoever reads the count can read the change's entry.
	// The workers were scaled, so it is shown even when the store failed.
	e.publish(seen)
	if err != nil {
		err = fmt.Errorf("round %s/%s: persist %s to %d: %w: %w", g, zn, d.Action, d.To, ErrStore, err)
		c.log.Error("autoscale not persisted", "group", g, "zone", zn, "err", err)
		return d, err
	}
	return d, nil
}

// observe scrapes every listed worker concurrently.
func (c *Controller) observe(ctx context.Context, eps []fleet.Endpoint) autoscaler.Observation {
	ws := make([]autoscaler.WorkerSample, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Go(func() {
			w, err := c.o.Scraper.Scrape(ctx, ep)
			if err != nil {
				w = autoscaler.WorkerSample{}
			}
			now := c.o.Clock.Now()
			w.ID, w.Created, w.SampledAt, w.Canary = ep.ID, ep.Created, now, ep.Canary
			w.Reachable = err == nil
			if !w.Reachable {
				w.Ready = false
				if errors.Is(err, ErrNoInflightLimit) {
					w.Down = DownNoInflightLimit
				}
			}
			if !ep.Ready {
				w.Ready = false
				w.Starting = c.starting(ep.Created, now)
			}
			ws[i] = w
		})
	}
	wg.Wait()
	return autoscaler.Observation{Workers: ws}
}

// stable counts the endpoints that are not a canary: the workers the count
// asks for.
func stable(eps []fleet.Endpoint) int {
	n := 0
	for _, ep := range eps {
		if !ep.Canary {
			n++
		}
	}
	return n
}

// PassReport sums up one scheduler pass.
type PassReport struct {
	Started time.Time     `json:"started"`
	Took    time.Duration `json:"took"`
	Visited int           `json:"visited"`
	Up      int           `json:"up"`
	Down    int           `json:"down"`
	Hold    int           `json:"hold"`
	Errors  int           `json:"errors"`
}

// Pass visits every group × zone once (Ramen 0.7.5's autoscaling notes: "Since 0.7.5 it visits
// every group × zone each interval"), Concurrency zones at a time, as actor
// ActorScheduler. Holds are written to the store in one transaction at the
// end. It stops early when ctx ends.
func (c *Controller) Pass(ctx context.Context) PassReport {
	rep := PassReport{Started: c.o.Clock.Now()}
	c.mu.RLock()
	entries := make([]*zoneEntry, 0, len(c.zones))
	for _, e := range c.zones {
		entries = append(entries, e)
	}
	c.mu.RUnlock()

	var mu sync.Mutex // guards rep, holds, logged
	var holds []*zoneEntry
	logged := 0
	const maxErrLogs = 10
	work := make(chan *zoneEntry)
	var wg sync.WaitGroup
	for range min(c.o.Concurrency, max(len(entries), 1)) {
		wg.Go(func() {
			for e := range work {
				e.mu.Lock()
				if !e.exists {
					e.mu.Unlock()
					continue
				}
				d, err := c.round(ctx, e, ActorScheduler, false)
				dirty := e.dirty
				g, zn := e.z.Group, e.z.Zone
				e.mu.Unlock()
				mu.Lock()
				rep.Visited++
				switch {
				case err != nil:
					rep.Errors++
					if logged < maxErrLogs && !errors.Is(err, context.Canceled) {
						logged++
						c.log.Warn("scheduler round failed", "group", g, "zone", zn, "err", err)
					}
				case d.Action == autoscaler.ActionUp:
					rep.Up++
				case d.Action == autoscaler.ActionDown:
					rep.Down++
				default:
					rep.Hold++
				}
				if dirty {
					holds = append(holds, e)
				}
				mu.Unlock()
			}
		})
	}
feed:
	for _, e := range entries {
		select {
		case work <- e:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()

	if len(holds) > 0 {
		ds := make([]store.ZoneDecision, 0, len(holds))
		stored := make([]*autoscaler.Decision, 0, len(holds)) // what ds holds, per entry of holds
		for _, e := range holds {
			e.mu.Lock()
			var d *autoscaler.Decision
			if e.dirty && e.z.LastDecision != nil {
				d = e.z.LastDecision
				ds = append(ds, store.ZoneDecision{Group: e.z.Group, Zone: e.z.Zone, Decision: *d})
			}
			stored = append(stored, d)
			e.mu.Unlock()
		}
		if err := c.o.Store.SetLastDecisions(ds); err != nil {
			rep.Errors++
			c.log.Error("scheduler: record holds", "zones", len(ds), "err", err)
		} else {
			// stored: shown now, unless a newer decision has replaced it since
			for i, e := range holds {
				e.mu.Lock()
				if stored[i] != nil && e.z.LastDecision == stored[i] {
					e.dirty = false
					e.publish(nil)
				}
				e.mu.Unlock()
			}
		}
	}
	rep.Took = c.o.Clock.Now().Sub(rep.Started)
	if rep.Errors > 0 {
		c.log.Warn("scheduler pass", "visited", rep.Visited, "up", rep.Up, "down", rep.Down,
			"hold", rep.Hold, "errors", rep.Errors, "took", rep.Took.String())
	} else {
		c.log.Debug("scheduler pass", "visited", rep.Visited, "up", rep.Up, "down", rep.Down,
			"hold", rep.Hold, "took", rep.Took.String())
	}
	return rep
}
