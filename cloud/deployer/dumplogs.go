package deployer

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/scaleproof/scaleproof/cloud"
)

// DumpLogs writes dir/cloud.json: the cluster (name, server, adopted) and
// every resource the run created with its labels, before anything is
// deleted (OnCluster dumps the deployed system's logs beside it).
func (d *Deployer) DumpLogs(_ context.Context, dir string) error {
	d.mu.Lock()
	c := d.cluster
	created := d.createdLocked()
	d.mu.Unlock()
	if c == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
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
	return err
}
