package kind

import (
	"context"
	"os"
	"path/filepath"
)

// DumpLogs copies kind's own logs of every node (journal, kubelet,
// containerd, pods) into dir/kind, before anything is deleted.
func (k *Kind) DumpLogs(ctx context.Context, dir string) error {
	api := k.createdAPI()
	if api == nil {
		return nil
	}
	return k.step("export logs", func() error {
		out := filepath.Join(dir, "kind")
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		return api.CollectLogs(k.name, out)
	})
}
