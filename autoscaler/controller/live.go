package controller

import (
	"context"
	"fmt"

	"github.com/scaleproof/scaleproof/autoscaler"
)

// Workers discovers and scrapes the zone's workers now, for the console's
// pages (Ramen 0.7.5's autoscaling notes, "Zones and workers: live workers
// with their load"). It changes nothing: no decision, no state, and the
// policy's previous samples (calls per second) are left alone. Each sample
// is as a round sees it (Reachable, Ready, Starting, InFlight, Limit,
// CallsTotal, SampledAt by the controller's clock). An unknown zone wraps
// ErrNotFound; a failed discovery wraps ErrDiscovery.
func (c *Controller) Workers(ctx context.Context, group, zone string) ([]autoscaler.WorkerSample, error) {
	if _, err := c.Zone(group, zone); err != nil {
		return nil, err
	}
	eps, err := c.o.Discovery.Endpoints(ctx, group, zone)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w: %w", group, zone, ErrDiscovery, err)
	}
	return c.observe(ctx, eps).Workers, nil
}
