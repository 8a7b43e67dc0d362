package local

// The readiness signals, for TestReadinessSignals.
var (
	SignalFailReadiness = signalFailReadiness
	SignalPassReadiness = signalPassReadiness
)
