package controller

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/scaleproof/scaleproof/autoscaler"
)

// Resync re-reads every zone, the scheduler configuration and the policies
// from the store and makes them the controller's, for a store another
// process writes too (a second console pod during a rollout on
// Kubernetes). A zone takes the stored count, max and last change; its
// in-memory observation history (the low streak, previous samples) is kept,
// and so is a newer hold not yet persisted (the zone's view shows the stored
// decision until that hold is stored). A new scheduler configuration
// wakes the scheduler as SetAutoRebalance does. Zones are never removed.
//
// The error wraps ErrStore; nothing changes when a read fails.
func (c *Controller) Resync() error {
	zs, err := c.o.Store.Zones()
	if err != nil {
		return fmt.Errorf("resync zones: %w: %w", ErrStore, err)
	}
	cfg, err := c.o.Store.AutoRebalance()
	if err != nil {
		return fmt.Errorf("resync config: %w: %w", ErrStore, err)
	}
	specs, raw, err := storedHPA(c.o.Store, "resync")
	if err != nil {
		return err
	}

	for _, z := range zs {
		e := c.lockOrCreate(z.Group, z.Zone)
		mine := e.z.LastDecision
		e.z = z
		if e.dirty && mine != nil && (z.LastDecision == nil || mine.At.After(z.LastDecision.At)) {
			e.z.LastDecision = mine
		} else {
			e.dirty = false
		}
		e.st = autoscaler.ZoneState{Count: z.Count, Max: z.MaxCount, LastChange: z.LastChange,
			LowStreak: e.st.LowStreak, Prev: e.st.Prev}
		e.exists = true
		e.publish(nil)
		if e.dirty && z.LastDecision != nil {
			// The view shows what is stored, never the unstored hold kept
			// above: here the other writer's decision.
			v := *e.view.Load()
			v.LastDecision = z.LastDecision
			e.view.Store(&v)
		}
		e.mu.Unlock()

		k := key(z.Group, z.Zone)
		cur := c.hpa.spec(z.Group, z.Zone)
		want := specs[k]
		switch {
		case want == nil && cur != nil:
			c.hpa.set(z.Group, z.Zone, nil)
		case want != nil && (cur == nil || !sameSpec(cur, raw[k])):
			c.hpa.set(z.Group, z.Zone, want)
		}
	}

	c.cfgMu.Lock()
	changed := c.cfg != cfg
	c.cfg = cfg
	c.cfgMu.Unlock()
	if changed {
		select {
		case c.cfgChanged <- struct{}{}:
		default:
		}
	}
	return nil
}

// sameSpec reports whether the resolved spec cur encodes to stored.
func sameSpec(cur *HPASpec, stored []byte) bool {
	b, err := json.Marshal(cur)
	if err != nil {
		return false
	}
	var a, s bytes.Buffer
	if json.Compact(&a, b) != nil || json.Compact(&s, stored) != nil {
		return false
	}
	return bytes.Equal(a.Bytes(), s.Bytes())
}
