package scenarios

import (
	"testing"

	"go.uber.org/goleak"
)

// Env.Run, Scope and loadRun start goroutines (the /readyz poller, the zone
// sampler, the load): none may outlive a test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
