package edge

import (
	"context"
	"fmt"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/fleet"
)

// Discovery lists every group × zone with its workers (fleet.Endpoint.Ready
// marks the routable ones). An error leaves the edge on its last good list.
type Discovery interface {
	Zones(ctx context.Context) ([]fleet.Zone, error)
}

// FleetDiscovery adapts a fleet client (GET /v1/endpoints) to Discovery.
type FleetDiscovery struct{ Client *fleet.Client }

var _ Discovery = FleetDiscovery{}

// Zones lists every zone through fleet.Client.All.
func (d FleetDiscovery) Zones(ctx context.Context) ([]fleet.Zone, error) { return d.Client.All(ctx) }

// Refresh runs one discovery round. On success the new list replaces the
// old; on failure the last good list stays and the error is returned. Either
// way, workers skipped after a dial failure become routable again.
func (e *Edge) Refresh(ctx context.Context) error {
	zones, err := e.disc.Zones(ctx)
	if err != nil {
		e.table.clearDialFailures()
		return fmt.Errorf("edge: discovery: %w", err)
	}
	e.table.replace(zones, e.routeUnready)
	e.discovered.Store(true)
	return nil
}

// Run refreshes discovery now and then every interval until ctx ends. It
// logs when discovery starts failing and when it recovers, not every failure.
func (e *Edge) Run(ctx context.Context) {
	t := time.NewTicker(e.interval)
	defer t.Stop()
	failing := false
	for {
		err := e.Refresh(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil && !failing:
			failing = true
			e.log.Warn("discovery failing, routing with the last good list", "err", err.Error())
		case err == nil && failing:
			failing = false
			e.log.Info("discovery recovered")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
