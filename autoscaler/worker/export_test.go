package worker

// SetDraining turns /readyz to 503 (and scaleproof_worker_ready to 0). Calls
// already admitted finish; new calls are still served until the server stops.
func (w *Worker) SetDraining() { w.health.SetDraining() }
