package deployer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/scaleproof/scaleproof/cloud"
)

// Down stops the token refresh, removes the credentials folder, then
// deletes what Up created in reverse order (the registry's repository, then the cluster's resources),
// never an adopted cluster. It goes on past a failed delete and returns
// every error; what it could not delete carries the run's expiry, so
// `scaleproof cloud janitor` finds it. Safe to call more than once and after
// a failed Up.
func (d *Deployer) Down(ctx context.Context) error {
	d.mu.Lock()
	if d.downDone {
		d.mu.Unlock()
		return nil
	}
	d.downDone = true
	ref, secrets := d.refresh, d.secretDir
	adopted := d.cluster != nil && d.cluster.Adopted
	created := d.createdLocked()
	d.mu.Unlock()

	var errs []error
	if ref != nil {
		ref.close()
	}
	if secrets != "" {
		if err := os.RemoveAll(secrets); err != nil {
			errs = append(errs, fmt.Errorf("remove the run's credentials folder %s: %w", secrets, err))
		}
	}
	var left []cloud.Resource
	for _, r := range slices.Backward(created) {
		if r.Kind == "cluster" && (adopted || (d.cfg.Options.Cluster != "" && r.Name == d.cfg.Options.Cluster)) {
			continue // never an adopted cluster
		}
		if err := d.step("delete "+r.String(), func() error { return d.cfg.Provider.Delete(ctx, r) }); err != nil {
			errs = append(errs, err)
			left = append(left, r)
		}
	}
	if c, ok := d.cfg.Provider.(io.Closer); ok {
		_ = c.Close() // its clients' idle connections; a later call makes new ones
	}
	if len(left) > 0 {
		names := make([]string, len(left))
		for i, r := range left {
			names[i] = r.String()
		}
		fmt.Fprintf(d.out, "%s: not deleted: %s; they carry the run's expiry: `scaleproof cloud janitor --platform %s ...` deletes them after it\n",
			d.Name(), strings.Join(names, ", "), strings.ToLower(d.Name()))
	}
	return errors.Join(errs...)
}
