package nodeimage

import (
	"context"

	"github.com/scaleproof/scaleproof/internal/filelock"
)

// lockWork takes an exclusive lock on the work dir's lock file, so two
// builds of one node image at once never write the same outputs: the
// second waits, then finds the image there. Bounded by ctx.
func lockWork(ctx context.Context, path string, log func(msg string, args ...any)) (func(), error) {
	return filelock.Lock(ctx, path, "another build of this node image is running; waiting for it", log)
}
