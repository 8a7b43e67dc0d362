package kind

import (
	"context"
	"errors"
	"os"
	"path/filepath"
)

// DumpLogs copies the system's logs (from the deploy step's platform) and
// kind's own logs of every node (journal, kubelet, containerd, pods) into
// dir, before anything is deleted.
func (k *Kind) DumpLogs(ctx context.Context, dir string) error {
	k.mu.Lock()
	created, dep := k.created, k.deployed
	var api clusters
	if created {
		api = k.api()
	}
	k.mu.Unlock()
	if !created {
		return nil
	}
	var errs []error
	if dep != nil {
		errs = append(errs, dep.DumpLogs(ctx, dir))
	}
	errs = append(errs, k.step("export logs", func() error {
		out := filepath.Join(dir, "kind")
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		return api.CollectLogs(k.name, out)
	}))
	return errors.Join(errs...)
}
