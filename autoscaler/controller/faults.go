package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// The console's planted bugs (package faults), for `scaleproof selftest`
// only: each breaks one rule of the step policy's contract on purpose. With
// an empty set nothing here changes a decision.

// StepPolicyWithFaults is StepPolicy with the faults of fs that live in the
// policy: ignore-up-cooldown and ignore-down-cooldown (the cooldown read as
// 0), down-too-early (one low round is enough), plus-one-steps (a step up
// adds one worker) and drop-to-one (a step down goes to 1), and those of
// how the controller applies the step rules: streak-not-reset and
// busiest-worker (faults_steprules.go). The config the console shows stays
// cfg: the bug is in the behaviour, not the settings.
func StepPolicyWithFaults(cfg autoscaler.StepConfig, fs faults.Set) Policy {
	if len(fs) == 0 {
		return StepPolicy(cfg)
	}
	if fs.On(faults.IgnoreUpCooldown) {
		cfg.UpCooldown = 0
	}
	if fs.On(faults.IgnoreDownCooldown) {
		cfg.DownCooldown = 0
	}
	if fs.On(faults.DownTooEarly) {
		cfg.LowRounds = 1
	}
	return withStepRuleFaults(fs, func(st autoscaler.ZoneState, obs autoscaler.Observation, now time.Time) (autoscaler.Decision, autoscaler.ZoneState) {
		d, next := autoscaler.Step(cfg, st, obs, now)
		switch {
		case d.Action == autoscaler.ActionUp && fs.On(faults.PlusOneSteps) && d.To > d.From+1:
			d.To, next.Count = d.From+1, d.From+1
		case d.Action == autoscaler.ActionDown && fs.On(faults.DropToOne) && d.To > 1:
			d.To, next.Count = 1, 1
		}
		return d, next
	})
}

// lingerRounds is how many allowed step downs the linger fault holds.
const lingerRounds = 3

// linger applies the linger fault to a round's decision (e.mu held): a
// step down is held lingerRounds times before it goes through. The held
// round still counts as low.
func (c *Controller) linger(e *zoneEntry, st autoscaler.ZoneState, d autoscaler.Decision, next autoscaler.ZoneState) (autoscaler.Decision, autoscaler.ZoneState) {
	if !c.o.Faults.On(faults.Linger) {
		return d, next
	}
	if d.Action != autoscaler.ActionDown {
		e.lingered = 0
		return d, next
	}
	if e.lingered >= lingerRounds {
		e.lingered = 0
		return d, next
	}
	e.lingered++
	next.Count, next.LastChange, next.LowStreak = st.Count, st.LastChange, st.LowStreak+1
	d = autoscaler.Decision{Action: autoscaler.ActionHold, From: st.Count, To: st.Count, At: d.At,
		Reason: fmt.Sprintf("lingering (%d of %d): %s", e.lingered, lingerRounds, d.Reason)}
	return d, next
}

// auditHold writes a hold to the audit log under the audit-holds fault.
func (c *Controller) auditHold(actor string, e *zoneEntry, d autoscaler.Decision) {
	if !c.o.Faults.On(faults.AuditHolds) {
		return
	}
	_, err := c.o.Store.AppendAudit(store.AuditEntry{At: d.At, Actor: actor, Group: e.z.Group, Zone: e.z.Zone,
		Action: AuditAutoscale, Tags: map[string]string{
			"action": string(d.Action), "from": itoa(d.From), "to": itoa(d.To), "reason": d.Reason}})
	if err != nil {
		c.log.Error("audit hold", "group", e.z.Group, "zone", e.z.Zone, "err", err)
	}
}

// lazyMax is the lowered-max-lazy fault's second half (e.mu held): a round
// that finds the count over the max brings it down to the max, as a forced
// change. ok is false when there was nothing to do.
func (c *Controller) lazyMax(ctx context.Context, e *zoneEntry, actor string) (autoscaler.Decision, bool, error) {
	if !c.o.Faults.On(faults.LoweredMaxLazy) || e.z.Count <= e.z.MaxCount {
		return autoscaler.Decision{}, false, nil
	}
	g, zn := e.z.Group, e.z.Zone
	from, to := e.z.Count, e.z.MaxCount
	if err := c.o.Target.Scale(ctx, g, zn, to, nil); err != nil {
		return autoscaler.Decision{}, true, fmt.Errorf("round %s/%s: bring count %d to max %d: %w: %w", g, zn, from, to, ErrScale, err)
	}
	now := c.o.Clock.Now()
	reason := fmt.Sprintf("max lowered to %d", to)
	d := autoscaler.Decision{Action: autoscaler.ActionSet, From: from, To: to, At: now, Reason: reason + " by " + actor}
	e.z.Count, e.z.LastChange = to, now
	dd := d
	e.z.LastDecision = &dd
	e.st.Count, e.st.LastChange, e.st.LowStreak = to, now, 0
	e.dirty = false
	c.countDecision(autoscaler.ActionSet)
	_, err := c.o.Store.Commit([]store.Zone{e.z}, []store.AuditEntry{{At: now, Actor: actor, Group: g, Zone: zn,
		Action: AuditCount, Tags: map[string]string{"from": itoa(from), "to": itoa(to), "reason": reason}}})
	// shown once its audit entry is stored, as a round's change is (round.go);
	// the workers were scaled, so it is shown even when the store failed
	e.publish(nil)
	if err != nil {
		return d, true, fmt.Errorf("round %s/%s: persist count %d: %w: %w", g, zn, to, ErrStore, err)
	}
	return d, true, nil
}
