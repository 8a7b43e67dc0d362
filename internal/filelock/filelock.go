// Package filelock is an exclusive lock on a file (flock), for the builds
// that write one cache folder (the kind node image, the KEDA images): a
// second build waits for the first, then finds its outputs there.
package filelock

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Lock takes an exclusive lock on path (made if missing, with its folder),
// waiting while another process holds it: log is told once, with waiting
// as its message, and the wait is bounded by ctx. The returned func
// releases it.
func Lock(ctx context.Context, path, waiting string, log func(msg string, args ...any)) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	said := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !said {
			log(waiting, "lock", path)
			said = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}
