package kind

import (
	"context"
	"fmt"
	"time"
)

// Down deletes the cluster (and with it everything deployed on it), unless Keep:
// then it says how to reach and delete it. Safe to call more than once and
// after a failed Up.
func (k *Kind) Down(ctx context.Context) error {
	k.mu.Lock()
	if k.downDone || !k.created {
		k.mu.Unlock()
		return nil
	}
	k.downDone = true
	api := k.api()
	engine := k.engine.Name
	k.mu.Unlock()
	if k.cfg.Keep {
		fmt.Fprintf(k.cfg.Out, "kind: kept cluster %s (--keep): kubectl --kubeconfig %s; delete it with: scaleproof kind delete %s --kind-provider %s --kubeconfig %s\n",
			k.name, k.kubeconfig, k.name, engine, k.kubeconfig)
		return nil
	}
	return k.step("delete cluster", func() error { return api.Delete(k.name, k.kubeconfig) })
}

// SystemDown: with --keep the system stays on the kept cluster; else only
// what the deploy step holds on this machine (port-forwards, clients) needs
// its Down, within 5 s: the cluster's own objects go with the cluster, so
// the system's wait for its namespace to drain (40 s in published) is cut
// short.
func (k *Kind) SystemDown() (keep bool, budget time.Duration) { return k.cfg.Keep, 5 * time.Second }

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
