package controller

import (
	"github.com/scaleproof/scaleproof/autoscaler/faults"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// The planted bugs of the bounds and the audit's actors (package faults,
// bounds.go), for `scaleproof selftest` only. With none of them on, nothing
// here changes what Apply does.

// acceptsAboveMax is the count-above-max-accepted fault: a manual count
// above the max passes validation.
func (c *Controller) acceptsAboveMax(ch Change) bool {
	return ch.Count != nil && c.o.Faults.On(faults.CountAboveMaxAccepted)
}

// countActor is the actor of a forced change's workers.count entry: the
// API key's name, or the scheduler under the audit-forced-as-scheduler fault.
func (c *Controller) countActor(actor string) string {
	if c.o.Faults.On(faults.AuditForcedAsScheduler) {
		return ActorScheduler
	}
	return actor
}

// leaksMax reports whether the max-leaks-to-group fault applies to ch on
// group/zone: a new max on a zone that already exists.
func (c *Controller) leaksMax(group, zone string, ch Change) bool {
	if ch.MaxCount == nil || !c.o.Faults.On(faults.MaxLeaksToGroup) {
		return false
	}
	e := c.lookup(group, zone)
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.exists
}

// leakMax is the max-leaks-to-group fault's effect, after Apply set max on
// group/zone: every other zone of the group is stored with that max too,
// its count left as it was and nothing audited.
func (c *Controller) leakMax(group, zone string, max int) {
	c.mu.RLock()
	var others []*zoneEntry
	for _, e := range c.zones {
		others = append(others, e)
	}
	c.mu.RUnlock()
	for _, e := range others {
		e.mu.Lock()
		if e.exists && e.z.Group == group && e.z.Zone != zone && e.z.MaxCount != max {
			e.z.MaxCount, e.st.Max = max, max
			if _, err := c.o.Store.Commit([]store.Zone{e.z}, nil); err != nil {
				c.log.Error("max-leaks-to-group: persist", "group", group, "zone", e.z.Zone, "err", err)
			} else {
				e.dirty = false // the commit stored z's last decision too
			}
			e.publish(nil)
		}
		e.mu.Unlock()
	}
}
