package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// Change is a forced change from the API: a new max, a new count, or both.
// A nil field keeps the current value.
type Change struct {
	MaxCount *int `json:"max_count,omitempty"`
	Count    *int `json:"count,omitempty"`
}

// AuditAction is the action a refused change is audited as:
// workers.max_count when it sets a max, workers.count otherwise.
func (ch Change) AuditAction() string {
	if ch.MaxCount != nil {
		return AuditMaxCount
	}
	return AuditCount
}

// SetMax sets a zone's max (Ramen 0.7.5's autoscaling notes, "The bounds"); see Apply.
func (c *Controller) SetMax(ctx context.Context, actor, group, zone string, maxCount int) (ZoneView, error) {
	return c.Apply(ctx, actor, group, zone, Change{MaxCount: &maxCount})
}

// SetCount sets a zone's count; see Apply.
func (c *Controller) SetCount(ctx context.Context, actor, group, zone string, count int) (ZoneView, error) {
	return c.Apply(ctx, actor, group, zone, Change{Count: &count})
}

// Apply makes a forced change at once, whatever the cooldowns:
//
//   - 1 <= max <= MaxCountLimit and 1 <= count <= max, else a
//     *ValidationError (the attempt is audited with error:invalid);
//   - lowering the max under the count brings the count to the max at once;
//   - the first change of a zone creates it (count 1 unless given; max = the
//     count unless given);
//   - a new count goes to the scale target first; if it fails nothing is
//     persisted and the error wraps ErrScale;
//   - a count change (or an explicit count) starts the cooldowns
//     (last_change = now), resets the low streak and is the zone's last
//     decision (action "set"); raising the max alone changes neither, so
//     the zone may scale up at once;
//   - audited as workers.max_count from: to: and workers.count from: to:.
func (c *Controller) Apply(ctx context.Context, actor, group, zone string, ch Change) (ZoneView, error) {
	leak := c.leaksMax(group, zone, ch) // the max-leaks-to-group fault (faults_bounds.go)
	v, err := c.apply(ctx, actor, group, zone, ch)
	if err == nil && leak {
		c.leakMax(group, zone, v.MaxCount)
	}
	return v, err
}

func (c *Controller) apply(ctx context.Context, actor, group, zone string, ch Change) (ZoneView, error) {
	action := ch.AuditAction()
	if err := checkNames(group, zone); err != nil {
		return ZoneView{}, err
	}
	if ch.MaxCount == nil && ch.Count == nil {
		err := &ValidationError{Field: "count", Reason: "nothing to change: give max_count and/or count"}
		return ZoneView{}, c.invalid(actor, group, zone, action, err)
	}
	e := c.lockOrCreate(group, zone)
	defer c.abandon(e)
	isNew := !e.exists
	old := e.z

	var newMax, newCount int
	lazy := false
	if isNew {
		newCount = 1
		if ch.Count != nil {
			newCount = *ch.Count
		}
		newMax = newCount
		if ch.MaxCount != nil {
			newMax = *ch.MaxCount
		}
	} else {
		newMax, newCount = old.MaxCount, old.Count
		if ch.MaxCount != nil {
			newMax = *ch.MaxCount
		}
		if ch.Count != nil {
			newCount = *ch.Count
		} else if newCount > newMax {
			if c.o.Faults.On(faults.LoweredMaxLazy) {
				lazy = true // the fault: the next round brings the count down (faults.go)
			} else {
				newCount = newMax // lowering the max under load brings the count down at once
			}
		}
	}
	switch {
	case ch.Count != nil && *ch.Count < 1:
		return ZoneView{}, c.invalid(actor, group, zone, action, &ValidationError{Field: "count",
			Reason: fmt.Sprintf("%d is below 1", *ch.Count)})
	case newMax < 1:
		return ZoneView{}, c.invalid(actor, group, zone, action, &ValidationError{Field: "max_count",
			Reason: fmt.Sprintf("%d is below 1", newMax)})
	case newMax > MaxCountLimit:
		return ZoneView{}, c.invalid(actor, group, zone, action, &ValidationError{Field: "max_count",
			Reason: fmt.Sprintf("%d is above the limit %d", newMax, MaxCountLimit)})
	case newCount < 1:
		return ZoneView{}, c.invalid(actor, group, zone, action, &ValidationError{Field: "count",
			Reason: fmt.Sprintf("%d is below 1", newCount)})
	case newCount > newMax && !lazy && !c.acceptsAboveMax(ch):
		return ZoneView{}, c.invalid(actor, group, zone, action, &ValidationError{Field: "count",
			Reason: fmt.Sprintf("%d is above max_count %d", newCount, newMax)})
	}

	countChanged := isNew || ch.Count != nil || newCount != old.Count
	now := c.o.Clock.Now()
	if countChanged {
		if err := c.o.Target.Scale(ctx, group, zone, newCount, nil); err != nil {
			err = fmt.Errorf("set %s/%s count to %d: %w: %w", group, zone, newCount, ErrScale, err)
			c.log.Error("forced change failed", "group", group, "zone", zone, "actor", actor,
				"action", action, "from", old.Count, "to", newCount, "err", err)
			return ZoneView{}, err
		}
	}

	var audits []store.AuditEntry
	reason := "manual count"
	if ch.MaxCount != nil || isNew {
		tags := map[string]string{"from": itoa(old.MaxCount), "to": itoa(newMax)}
		if isNew {
			tags["created"] = "true"
		}
		audits = append(audits, store.AuditEntry{At: now, Actor: actor, Group: group, Zone: zone,
			Action: AuditMaxCount, Tags: tags})
	}
	if countChanged {
		switch {
		case isNew:
			reason = "zone created"
		case ch.Count == nil:
			reason = fmt.Sprintf("max lowered to %d", newMax)
		}
		audits = append(audits, store.AuditEntry{At: now, Actor: c.countActor(actor), Group: group, Zone: zone,
			Action: AuditCount, Tags: map[string]string{"from": itoa(old.Count), "to": itoa(newCount), "reason": reason}})
	}

	nz := old
	nz.Group, nz.Zone, nz.MaxCount, nz.Count = group, zone, newMax, newCount
	if isNew {
		nz.Created = now
	}
	if countChanged {
		nz.LastChange = now
		d := autoscaler.Decision{Action: autoscaler.ActionSet, From: old.Count, To: newCount, At: now,
			Reason: reason + " by " + actor}
		nz.LastDecision, nz.LastScale = &d, &d
	}
	var policies []store.ZonePolicy
	var lowered *HPASpec // the bounds rule of policy.go: max_count bounds hpa max_replicas
	if !isNew && ch.MaxCount != nil {
		if rec, a, n, ok := c.boundPolicyLocked(e, actor, newMax, now); ok {
			policies, lowered = []store.ZonePolicy{rec}, n
			audits = append(audits, a)
		}
	}
	persisted := nz
	if !isNew && !countChanged && c.o.Faults.On(faults.MaxAloneNotPersisted) {
		persisted.MaxCount = old.MaxCount // the planted bug: memory has the new max, the store the old
	}
	if _, err := c.o.Store.CommitPolicies(policies, []store.Zone{persisted}, audits); err != nil {
		err = fmt.Errorf("set %s/%s: persist: %w: %w", group, zone, ErrStore, err)
		c.log.Error("forced change not persisted", "group", group, "zone", zone, "actor", actor, "err", err)
		if !countChanged {
			return ZoneView{}, err
		}
		// The scale target already has the new count: keep memory true to it.
	} else if lowered != nil {
		c.hpa.set(group, zone, lowered)
	}
	e.z = nz
	e.exists = true
	e.st.Count, e.st.Max, e.st.LastChange = nz.Count, nz.MaxCount, nz.LastChange
	if countChanged {
		e.st.LowStreak = 0
		c.countDecision(autoscaler.ActionSet)
	}
	e.dirty = false
	e.publish(nil)
	for _, a := range audits { // one line per audit entry, with its fields
		attrs := []any{"group", group, "zone", zone, "actor", actor}
		for _, k := range []string{"from", "to", "reason", "created"} {
			if v, ok := a.Tags[k]; ok {
				attrs = append(attrs, k, v)
			}
		}
		c.log.Info(a.Action, attrs...)
	}
	return *e.view.Load(), nil
}

// invalid audits a refused invalid attempt and returns err (or the audit's
// failure joined to it).
func (c *Controller) invalid(actor, group, zone, action string, err *ValidationError) error {
	if aerr := c.Refused(actor, group, zone, action, RefusedInvalid, err.Error()); aerr != nil {
		return errors.Join(err, aerr)
	}
	return err
}

// Rebalance runs a Round now for the API and audits workers.rebalance with
// the actor who pressed it (Ramen 0.7.5's autoscaling notes, "Who runs it").
func (c *Controller) Rebalance(ctx context.Context, actor, group, zone string) (autoscaler.Decision, error) {
	d, err := c.Round(ctx, group, zone, actor)
	if errors.Is(err, ErrNotFound) {
		return d, err
	}
	tags := map[string]string{"action": string(d.Action), "from": itoa(d.From), "to": itoa(d.To)}
	entry := store.AuditEntry{At: c.o.Clock.Now(), Actor: actor, Group: group, Zone: zone, Action: AuditRebalance, Tags: tags}
	if err != nil {
		entry.Error = err.Error()
		tags["error"] = "failed"
	}
	if _, aerr := c.o.Store.AppendAudit(entry); aerr != nil {
		aerr = fmt.Errorf("audit rebalance %s/%s: %w: %w", group, zone, ErrStore, aerr)
		c.log.Error("rebalance not audited", "group", group, "zone", zone, "actor", actor, "err", aerr)
		if err == nil {
			err = aerr
		}
	}
	c.log.Info(AuditRebalance, "group", group, "zone", zone, "actor", actor,
		"action", string(d.Action), "from", d.From, "to", d.To, "reason", d.Reason)
	return d, err
}

// AutoRebalance returns the scheduler configuration.
func (c *Controller) AutoRebalance() store.AutoRebalance {
	c.cfgMu.Lock()
	defer c.cfgMu.Unlock()
	return c.cfg
}

// SetAutoRebalance changes the scheduler configuration (MinInterval <=
// interval <= MaxInterval, else a *ValidationError audited with error:invalid),
// persists and audits it (config.autorebalance) and wakes the scheduler:
// the change takes effect without a restart.
func (c *Controller) SetAutoRebalance(actor string, cfg store.AutoRebalance) (store.AutoRebalance, error) {
	if cfg.Interval < MinInterval || cfg.Interval > MaxInterval {
		err := &ValidationError{Field: "interval_seconds",
			Reason: fmt.Sprintf("%g s is outside [%g, %g]", cfg.Interval.Seconds(), MinInterval.Seconds(), MaxInterval.Seconds())}
		return c.AutoRebalance(), c.invalid(actor, "", "", AuditAutoRebalance, err)
	}
	c.cfgMu.Lock()
	defer c.cfgMu.Unlock()
	old := c.cfg
	tags := map[string]string{
		"enabled":          strconv.FormatBool(cfg.Enabled),
		"interval_seconds": strconv.FormatFloat(cfg.Interval.Seconds(), 'g', -1, 64),
		"from":             fmt.Sprintf("enabled=%t interval=%s", old.Enabled, old.Interval),
	}
	_, err := c.o.Store.SetAutoRebalance(cfg, store.AuditEntry{At: c.o.Clock.Now(), Actor: actor,
		Action: AuditAutoRebalance, Tags: tags})
	if err != nil {
		return old, fmt.Errorf("set auto-rebalance: %w: %w", ErrStore, err)
	}
	c.cfg = cfg
	select {
	case c.cfgChanged <- struct{}{}:
	default: // a wake-up is already pending; the scheduler reads the latest config
	}
	c.log.Info(AuditAutoRebalance, "actor", actor, "enabled", cfg.Enabled, "interval", cfg.Interval.String())
	return cfg, nil
}

// ErrSchedulerRunning: RunScheduler was called while one runs.
var ErrSchedulerRunning = errors.New("scheduler already running")

// RunScheduler runs the auto-rebalance scheduler until ctx ends: when
// enabled, every interval it runs a Pass over every group × zone. Enabling,
// disabling and a new interval take effect at once (a new interval starts a
// new ticker). A pass that outlasts the interval delays the next tick.
func (c *Controller) RunScheduler(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return ErrSchedulerRunning
	}
	defer c.running.Store(false)
	var t Ticker
	var tick <-chan time.Time
	stop := func() {
		if t != nil {
			t.Stop()
			t, tick = nil, nil
		}
	}
	defer stop()
	var cur store.AutoRebalance
	apply := func(first bool) {
		cfg := c.AutoRebalance()
		if !first && cfg == cur {
			return
		}
		cur = cfg
		stop()
		if cfg.Enabled {
			t = c.o.Tickers.NewTicker(cfg.Interval)
			tick = t.C()
		}
		c.log.Info("auto-rebalance scheduler", "enabled", cfg.Enabled, "interval", cfg.Interval.String())
	}
	apply(true)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.cfgChanged:
			apply(false)
		case <-tick:
			rep := c.Pass(ctx)
			if c.o.OnPass != nil {
				c.o.OnPass(rep)
			}
		}
	}
}
