package deployer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/scaleproof/scaleproof/cloud"
)

// credentials makes the first token, writes it to h.TokenFile and the
// kubeconfig to h.Kubeconfig (its user reads the token file, which client-go
// re-reads about every minute), and starts the refresh.
func (d *Deployer) credentials(ctx context.Context, h Handoff) error {
	tok, err := d.cfg.Provider.Token(ctx, h.Cluster)
	if err != nil {
		return err
	}
	if err := writeToken(h.TokenFile, tok.Value); err != nil {
		return err
	}
	if err := writeKubeconfig(h); err != nil {
		return err
	}
	r := &refresher{d: d, c: h.Cluster, path: h.TokenFile, stop: make(chan struct{}), done: make(chan struct{}), refreshed: d.onRefresh}
	d.mu.Lock()
	d.refresh = r
	d.mu.Unlock()
	go r.run(tok)
	return nil
}

// writeKubeconfig writes a kubeconfig with one cluster, one user (tokenFile)
// and one current context, all named after the cluster.
func writeKubeconfig(h Handoff) error {
	c := h.Cluster
	if c.Server == "" {
		return fmt.Errorf("credentials: cluster %s has no API server endpoint", c.Name)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.Name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: c.CAData}
	cfg.AuthInfos[c.Name] = &clientcmdapi.AuthInfo{TokenFile: h.TokenFile}
	cfg.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: c.Name}
	cfg.CurrentContext = c.Name
	if err := clientcmd.WriteToFile(*cfg, h.Kubeconfig); err != nil {
		return fmt.Errorf("credentials: write kubeconfig: %w", err)
	}
	return os.Chmod(h.Kubeconfig, 0o600)
}

// writeToken replaces the token file atomically (mode 0600): a reader
// never sees half a token.
func writeToken(path, token string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(token), 0o600); err != nil {
		return fmt.Errorf("credentials: write token: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("credentials: write token: %w", err)
	}
	return nil
}

// refresher replaces the token file before the token expires.
type refresher struct {
	d        *Deployer
	c        cloud.Cluster
	path     string
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	// refreshed, when set (tests), gets a value after each attempt.
	refreshed chan error
}

// retryAfter is how soon a failed refresh is tried again.
const retryAfter = 30 * time.Second

// wait is how long until tok should be replaced: RefreshBefore its expiry,
// at most half its remaining lifetime before it, at least a second; a
// token that never expires is never replaced (-1).
func (r *refresher) wait(tok cloud.Token) time.Duration {
	if tok.Expiry.IsZero() {
		return -1
	}
	left := tok.Expiry.Sub(r.d.now())
	return max(left-r.d.cfg.RefreshBefore, left/2, time.Second)
}

func (r *refresher) run(tok cloud.Token) {
	defer close(r.done)
	w := r.wait(tok)
	for {
		if w < 0 {
			return
		}
		select {
		case <-r.stop:
			return
		case <-r.d.cfg.After(w):
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		next, err := r.d.cfg.Provider.Token(ctx, r.c)
		cancel()
		if err == nil {
			err = writeToken(r.path, next.Value)
		}
		if err != nil {
			r.d.log.Warn("token refresh failed; trying again", "in", retryAfter.String(), "err", err)
			w = retryAfter
		} else {
			r.d.log.Info("token refreshed", "expires", next.Expiry)
			w = r.wait(next)
		}
		if r.refreshed != nil {
			r.refreshed <- err
		}
	}
}

// close stops the refresh and waits for it to end.
func (r *refresher) close() {
	r.stopOnce.Do(func() { close(r.stop) })
	<-r.done
}
