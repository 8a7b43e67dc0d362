package kubeconfig

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Down stops the port-forwards and deletes the namespace (and so everything
// in it, the console's worker Deployments included), then waits until it is
// gone, bounded by ctx. Safe to call twice and after a failed Up.
func (p *Platform) Down(ctx context.Context) error {
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		return nil
	}
	p.down = true
	fws := p.forwards
	p.forwards = nil
	p.mu.Unlock()
	for _, stop := range fws {
		close(stop)
	}
	ns := p.cfg.Namespace
	policy := metav1.DeletePropagationBackground
	err := p.kc.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{PropagationPolicy: &policy})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("platform kubeconfig: delete namespace %s: %w", ns, err)
	}
	start := time.Now()
	err = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := p.kc.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("platform kubeconfig: namespace %s still terminating after %s: %w", ns, time.Since(start).Round(time.Second), err)
	}
	p.log.Info("namespace deleted", "namespace", ns, "took", time.Since(start).String())
	return nil
}
