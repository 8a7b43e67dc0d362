package kubeconfig

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/scaleproof/scaleproof/autoscaler/deploy/render"
)

// Down stops the port-forwards and deletes the namespace (and so everything
// in it, the console's worker Deployments included), then waits until it is
// gone, bounded by ctx. Safe to call twice and after a failed Up. With an
// adopted target (Config.Target.Adopt) it deletes only the two roles'
// objects Up made and never the namespace (downAdopted).
func (p *Platform) Down(ctx context.Context) error {
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		return nil
	}
	p.down = true
	fws := p.forwards
	p.forwards = nil
	secrets := p.secretDir
	p.mu.Unlock()
	for _, stop := range fws {
		close(stop)
	}
	if secrets != "" {
		if err := os.RemoveAll(secrets); err != nil {
			p.log.Warn("the target's kubeconfig files were not removed", "dir", secrets, "err", err)
		}
	}
	if p.adopted() {
		return p.downAdopted(ctx)
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

// downAdopted removes what Up made beside an adopted target (the two
// roles' objects), never the namespace or the target. NotFound is fine.
func (p *Platform) downAdopted(ctx context.Context) error {
	objs, err := render.TargetRBAC(p.cfg.Namespace)
	if err != nil {
		return err
	}
	var errs []error
	for i := len(objs) - 1; i >= 0; i-- { // bindings, then roles, then accounts
		o := objs[i]
		var err error
		switch o.GetKind() {
		case "RoleBinding":
			err = p.kc.RbacV1().RoleBindings(p.cfg.Namespace).Delete(ctx, o.GetName(), metav1.DeleteOptions{})
		case "Role":
			err = p.kc.RbacV1().Roles(p.cfg.Namespace).Delete(ctx, o.GetName(), metav1.DeleteOptions{})
		case "ServiceAccount":
			err = p.kc.CoreV1().ServiceAccounts(p.cfg.Namespace).Delete(ctx, o.GetName(), metav1.DeleteOptions{})
		default:
			continue
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("platform kubeconfig: delete %s %s/%s: %w", o.GetKind(), p.cfg.Namespace, o.GetName(), err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	p.log.Info("adopted target: roles removed, namespace kept", "namespace", p.cfg.Namespace)
	return nil
}
