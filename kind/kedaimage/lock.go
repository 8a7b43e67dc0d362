package kedaimage

import (
	"context"

	"github.com/scaleproof/scaleproof/internal/filelock"
)

// lock takes an exclusive lock on one image set of the cache dir, so two
// builds of a set at once (two `make keda-images`) never write the same
// outputs: the second waits, then finds the archives there. Bounded by ctx.
func lock(ctx context.Context, path string, log func(msg string, args ...any)) (func(), error) {
	return filelock.Lock(ctx, path, "another build of these images is running; waiting for it", log)
}
