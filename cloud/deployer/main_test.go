package deployer

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind (a
// token refresh, an idle API connection).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
