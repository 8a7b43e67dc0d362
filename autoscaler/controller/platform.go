package controller

import (
	"context"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler"
	"github.com/scaleproof/scaleproof/autoscaler/fleet"
)

// ScaleTarget is the scale subresource of a group × zone's workers. Victims,
// in order, are the workers to remove first when replicas goes down.
type ScaleTarget interface {
	Scale(ctx context.Context, group, zone string, replicas int, victims []string) error
}

// Discovery lists a zone's workers with their address and readiness (the
// EndpointSlices).
type Discovery interface {
	Endpoints(ctx context.Context, group, zone string) ([]fleet.Endpoint, error)
}

// Scraper reads one worker's metrics. It fills ID, Created, Reachable, Ready
// (the endpoint's readiness and the worker's own gauge), InFlight, Limit and
// CallsTotal; the controller sets SampledAt and Starting. On an error
// (including its timeout) the controller marks the worker unreachable.
type Scraper interface {
	Scrape(ctx context.Context, ep fleet.Endpoint) (autoscaler.WorkerSample, error)
}

// Policy decides one round for one zone. It must be pure: the controller
// passes the zone's state, this round's observation and the round's time.
// StepPolicy adapts the step policy of Ramen 0.7.5's autoscaling notes; another one (an HPA-like
// policy) plugs in the same way.
type Policy func(st autoscaler.ZoneState, obs autoscaler.Observation, now time.Time) (autoscaler.Decision, autoscaler.ZoneState)

// StepPolicy returns the step policy of Ramen 0.7.5's autoscaling notes with cfg.
func StepPolicy(cfg autoscaler.StepConfig) Policy {
	return func(st autoscaler.ZoneState, obs autoscaler.Observation, now time.Time) (autoscaler.Decision, autoscaler.ZoneState) {
		return autoscaler.Step(cfg, st, obs, now)
	}
}

// Fleet adapts a autoscaler/fleet client (the local platform) to ScaleTarget
// and Discovery.
type Fleet struct{ c *fleet.Client }

var (
	_ ScaleTarget = (*Fleet)(nil)
	_ Discovery   = (*Fleet)(nil)
)

// NewFleet returns the adapter for c.
func NewFleet(c *fleet.Client) *Fleet { return &Fleet{c: c} }

// Scale sets the zone's replicas, removing victims first.
func (f *Fleet) Scale(ctx context.Context, group, zone string, replicas int, victims []string) error {
	_, err := f.c.Scale(ctx, group, zone, fleet.ScaleRequest{Replicas: replicas, Victims: victims})
	return err
}

// Endpoints lists the zone's workers; a zone the fleet does not know has none.
func (f *Fleet) Endpoints(ctx context.Context, group, zone string) ([]fleet.Endpoint, error) {
	z, err := f.c.Zone(ctx, group, zone)
	if err != nil {
		return nil, err
	}
	return z.Endpoints, nil
}
