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
		fmt.Fprintf(k.cfg.Out, "kind: kept cluster %s (--keep): kubectl --kubeconfig %s; delete it with: scaleproof kind delete %s --kind-provider %s --kubeconfig %s\n",
			k.name, k.kubeconfig, k.name, engine, k.kubeconfig)
		return nil
	}
	var errs []error
	if dep != nil {
		// only for what the deploy step holds on this machine (port-forwards,
		// clients): the cluster's own objects go with the cluster, so its wait
		// for the namespace to drain (40 s in published) is cut short
		dctx, cancel := context.WithTimeout(ctx, deployedDownBudget)
		if err := dep.Down(dctx); err != nil {
			k.cfg.Log.Info("deployed system down cut short; the cluster delete removes the rest", "err", err)
		}
		cancel()
	}
	errs = append(errs, k.step("delete cluster", func() error { return api.Delete(k.name, k.kubeconfig) }))
	return errors.Join(errs...)
}

// deployedDownBudget bounds the deployed system's Down before the cluster
// is deleted.
const deployedDownBudget = 5 * time.Second

// DeleteCluster deletes the kind cluster name (one kept with --keep) on the
// engine chosen as Up chooses it; kubeconfig ("" for none) loses its context.
func DeleteCluster(ctx context.Context, provider, name, kubeconfig string) error {
	e, err := ChooseEngine(ctx, provider, realProber{})
	if err != nil {
		return err
	}
	p := providerFor(e, nil)
	names, err := p.List()
	if err != nil {
		return err
	}
	for _, n := range names {
		if n == name {
			return p.Delete(name, kubeconfig)
		}
	}
	return fmt.Errorf("no kind cluster %q on %s (have: %v)", name, e.Name, names)
}
