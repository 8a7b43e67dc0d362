package kubeconfig

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/scaleproof/scaleproof/autoscaler/serve"
)

// IsUp reports whether the console and the edge answer /readyz; in target
// mode, whether the scale target's Deployment has a ready replica.
func (p *Platform) IsUp(ctx context.Context) (bool, error) {
	p.mu.Lock()
	e := p.endpoints
	p.mu.Unlock()
	if t := e.Target; t != nil {
		d, err := p.kc.AppsV1().Deployments(t.Namespace).Get(ctx, t.Deployment, metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas > 0, nil
	}
	if e.ConsoleURL == "" {
		return false, nil
	}
	for _, u := range []string{e.ConsoleURL, e.EdgeURL} {
		if err := serve.WaitOK(ctx, u+"/readyz", time.Second, nil); err != nil {
			return false, nil
		}
	}
	return true, nil
}
