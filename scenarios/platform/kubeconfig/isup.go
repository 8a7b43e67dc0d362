package kubeconfig

import (
	"context"
	"time"

	"github.com/scaleproof/scaleproof/refstack/serve"
)

// IsUp reports whether the console and the edge answer /readyz.
func (p *Platform) IsUp(ctx context.Context) (bool, error) {
	p.mu.Lock()
	e := p.endpoints
	p.mu.Unlock()
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
