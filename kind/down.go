package kind

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Down deletes the cluster (and with it everything deployed), unless Keep:
// then it says how to reach and delete it. Safe to call more than once and
// after a failed Up.
func (k *Kind) Down(ctx context.Context) error {
	k.mu.Lock()
	if k.downDone || !k.created {
		k.mu.Unlock()
		return nil
	}
	k.downDone = true
	dep := k.deployed
	api := k.api()
	engine := k.engine.Name
	k.mu.Unlock()
	if k.cfg.Keep {
		fmt.Fprintf(k.cfg.Out, "kind: kept cluster %s (--keep): kubectl --kubeconfig %s; delete it with: KIND_EXPERIMENTAL_PROVIDER=%s kind delete cluster --name %s\n",
			k.name, k.kubeconfig, engine, k.name)
		return nil
	}
	var errs []error
	if dep != nil {
		// what the deploy step holds on this machine (port-forwards, clients);
		// the cluster's own objects go with the cluster
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := dep.Down(dctx); err != nil {
			k.cfg.Log.Warn("deployed system down", "err", err)
		}
		cancel()
	}
	errs = append(errs, k.step("delete cluster", func() error { return api.Delete(k.name, k.kubeconfig) }))
	return errors.Join(errs...)
}
