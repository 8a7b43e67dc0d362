package edge

import "errors"

// SetDraining turns /readyz to 503. Calls are still routed until the server stops.
func (e *Edge) SetDraining() { e.health.SetDraining() }

// Ready reports nil when /readyz answers 200, else why not.
func (e *Edge) Ready() error {
	if e.health.Draining() {
		return errors.New("draining")
	}
	return e.discoveredOnce()
}

// WorkerInFlight returns the number of calls the edge has in flight to the
// worker id at addr, and whether the current discovery list routes to it.
func (e *Edge) WorkerInFlight(id, addr string) (int, bool) { return e.table.inflight(id, addr) }
