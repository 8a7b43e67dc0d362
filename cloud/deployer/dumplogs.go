package deployer

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	"github.com/scaleproof/scaleproof/cloud"
)

// DumpLogs copies the deployed system's logs (the kubeconfig platform's:
// every pod's logs, the events) into dir, and writes dir/cloud.json: the
// cluster (name, server, adopted) and every resource the run created with
// its labels, before anything is deleted.
func (d *Deployer) DumpLogs(ctx context.Context, dir string) error {
	d.mu.Lock()
	dep, c := d.deployed, d.cluster
	created := d.createdLocked()
	d.dumped = true
	d.mu.Unlock()
	if c == nil {
		return nil
	}
	var errs []error
	if dep != nil {
		errs = append(errs, dep.DumpLogs(ctx, dir))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return errors.Join(append(errs, err)...)
	}
	b, err := json.MarshalIndent(struct {
		Provider string           `json:"provider"`
		Cluster  string           `json:"cluster"`
		Server   string           `json:"server,omitempty"`
		Adopted  bool             `json:"adopted"`
		Created  []cloud.Resource `json:"created"`
	}{d.Name(), c.Name, c.Server, c.Adopted, created}, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "cloud.json"), b, 0o644)
	}
	return errors.Join(append(errs, err)...)
}
