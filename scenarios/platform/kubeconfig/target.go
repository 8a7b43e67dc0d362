package kubeconfig

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/autoscaler/deploy/render"
)

// Target mode (Config.Target): the platform deploys, or adopts, a scale
// target that an autoscaler not ours scales (the cluster's HPA, or KEDA),
// and no console or edge. See upTarget for what Up does then.

// TokenSeconds is the lifetime of the two roles' ServiceAccount tokens
// (TokenRequest's expirationSeconds): 1 h, longer than any run.
const TokenSeconds = 3600

// The kubeconfig files a target run writes (mode 0600) into a private
// temporary folder (0700) that Down removes: they hold credentials (the
// run's own, two ServiceAccount tokens), and the artifacts folder is
// published.
const (
	RunKubeconfigFile    = "target-kubeconfig"        // the run's own credentials
	AdminKubeconfigFile  = "target-admin-kubeconfig"  // scaleproof-target-admin's token
	ViewerKubeconfigFile = "target-viewer-kubeconfig" // scaleproof-target-viewer's token
)

// checkTarget checks a target run's fields (New's bad input).
func checkTarget(c Config) []error {
	t := c.Target
	var errs []error
	if t.Kind != render.KindHPA && t.Kind != render.KindKEDA {
		errs = append(errs, fmt.Errorf("target %q: want %s or %s", t.Kind, render.KindHPA, render.KindKEDA))
	}
	if a := t.Adopt; a != nil {
		if a.Namespace == "" {
			errs = append(errs, errors.New("target: adopt: no namespace"))
		}
		if errs2 := validation.IsDNS1123Subdomain(a.Deployment); a.Deployment == "" || len(errs2) > 0 {
			errs = append(errs, fmt.Errorf("target: adopt: deployment %q: want the scale target's Deployment name", a.Deployment))
		}
		if t.Kind == render.KindHPA && a.HPA == "" {
			errs = append(errs, errors.New("target: adopt: no HorizontalPodAutoscaler named"))
		}
		if t.Kind == render.KindKEDA && a.ScaledObject == "" {
			errs = append(errs, errors.New("target: adopt: no ScaledObject named"))
		}
		if err := loopbackURL(a.LoadURL); err != nil {
			errs = append(errs, fmt.Errorf("target: adopt: --load-url: %w", err))
		}
		return errs
	}
	if t.Workload != render.WorkloadWorker && t.Workload != render.WorkloadQueue {
		errs = append(errs, fmt.Errorf("target workload %q: want %s or %s", t.Workload, render.WorkloadWorker, render.WorkloadQueue))
		return errs
	}
	if _, err := render.Target(render.TargetParams{Profile: c.Profile, Namespace: c.Namespace, Image: c.Image, Kind: t.Kind, Workload: t.Workload}); err != nil && len(errs) == 0 {
		errs = append(errs, err)
	}
	if t.Kind == render.KindKEDA {
		if _, err := render.TargetPrometheus(render.PrometheusParams{Namespace: c.Namespace, Image: c.PrometheusImage}); err != nil {
			errs = append(errs, err)
		}
	}
	if c.NodeHost != "" {
		ports := map[string]int{"target": c.TargetHostPort}
		if t.Kind == render.KindKEDA {
			ports["prometheus"] = c.PrometheusHostPort
		}
		errs = append(errs, checkNodeHost(c.NodeHost, ports)...)
	}
	return errs
}

// checkNodeHost checks a node host and the host ports mapped on it (by
// name): the host must be a loopback address, as load goes to loopback
// only, and each port in 1..65535.
func checkNodeHost(host string, ports map[string]int) []error {
	var errs []error
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		errs = append(errs, fmt.Errorf("node host %q: want a loopback address (127.0.0.0/8): load goes to loopback only", host))
	}
	for n, p := range ports {
		if p <= 0 || p > 65535 {
			errs = append(errs, fmt.Errorf("%s host port %d: want 1..65535 with a node host", n, p))
		}
	}
	return errs
}

// loopbackURL accepts an http(s) URL whose host is a loopback address:
// load goes to loopback only (a port-forward, or kind's mapped NodePort).
func loopbackURL(s string) error {
	if s == "" {
		return errors.New("needed when adopting: where the load's calls go, a loopback URL such as http://127.0.0.1:8080 (for example kubectl port-forward svc/NAME 8080:80)")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: want http://127.0.0.1:PORT", s)
	}
	h := u.Hostname()
	if ip := net.ParseIP(h); (ip == nil || !ip.IsLoopback()) && h != "localhost" {
		return fmt.Errorf("%q: want a loopback host (127.0.0.0/8): load goes to loopback only (port-forward to the Service)", s)
	}
	return nil
}

// adopted reports whether the run adopts the user's target (nothing deployed).
func (p *Platform) adopted() bool { return p.cfg.Target != nil && p.cfg.Target.Adopt != nil }

// token asks the API server for a token of the ServiceAccount sa
// (TokenRequest, TokenSeconds).
func (p *Platform) token(ctx context.Context, sa string) (string, error) {
	exp := int64(TokenSeconds)
	tr, err := p.kc.CoreV1().ServiceAccounts(p.cfg.Namespace).CreateToken(ctx, sa,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("platform kubeconfig: token of serviceaccount %s/%s: %w", p.cfg.Namespace, sa, err)
	}
	if tr.Status.Token == "" {
		return "", fmt.Errorf("platform kubeconfig: token of serviceaccount %s/%s: empty", p.cfg.Namespace, sa)
	}
	return tr.Status.Token, nil
}

// writeKubeconfigs writes the three kubeconfig files into a new private
// folder (os.MkdirTemp: mode 0700; Platform.secretDir, removed by Down): the run's own (its kubeconfig's context, minified and
// with its files embedded) and, for the same cluster, one whose user is
// each role's ServiceAccount token. It returns their paths: run, admin,
// viewer.
func (p *Platform) writeKubeconfigs(ctx context.Context) (run, admin, viewer string, err error) {
	raw, err := p.rawConfig()
	if err != nil {
		return "", "", "", err
	}
	dir, err := os.MkdirTemp("", "scaleproof-target-")
	if err != nil {
		return "", "", "", fmt.Errorf("platform kubeconfig: private folder for the kubeconfig files: %w", err)
	}
	p.mu.Lock()
	p.secretDir = dir
	p.mu.Unlock()
	write := func(name string, c *clientcmdapi.Config) (string, error) {
		path := filepath.Join(dir, name)
		b, err := clientcmd.Write(*c)
		if err != nil {
			return "", fmt.Errorf("platform kubeconfig: %s: %w", name, err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return "", fmt.Errorf("platform kubeconfig: %w", err)
		}
		return path, os.Chmod(path, 0o600) // an existing file keeps its mode otherwise
	}
	if run, err = write(RunKubeconfigFile, raw); err != nil {
		return "", "", "", err
	}
	kctx := raw.Contexts[raw.CurrentContext]
	cluster := raw.Clusters[kctx.Cluster]
	var paths [2]string
	for i, sa := range []string{deploykube.TargetAdminName, deploykube.TargetViewerName} {
		tok, err := p.token(ctx, sa)
		if err != nil {
			return "", "", "", err
		}
		c := clientcmdapi.NewConfig()
		c.Clusters[kctx.Cluster] = cluster
		c.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tok}
		c.Contexts[sa] = &clientcmdapi.Context{Cluster: kctx.Cluster, AuthInfo: sa, Namespace: p.cfg.Namespace}
		c.CurrentContext = sa
		file := AdminKubeconfigFile
		if i == 1 {
			file = ViewerKubeconfigFile
		}
		if paths[i], err = write(file, c); err != nil {
			return "", "", "", err
		}
	}
	return run, paths[0], paths[1], nil
}

// rawConfig is the kubeconfig New read, minified to the context in use
// (Config.Context, else its current context) with its files embedded.
func (p *Platform) rawConfig() (*clientcmdapi.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if p.cfg.Kubeconfig != "" {
		rules.ExplicitPath = p.cfg.Kubeconfig
	}
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: p.cfg.Context}).RawConfig()
	if err != nil {
		return nil, fmt.Errorf("platform kubeconfig: read kubeconfig: %w", err)
	}
	if p.cfg.Context != "" {
		raw.CurrentContext = p.cfg.Context
	}
	if err := clientcmdapi.MinifyConfig(&raw); err != nil {
		return nil, fmt.Errorf("platform kubeconfig: kubeconfig: %w", err)
	}
	if err := clientcmdapi.FlattenConfig(&raw); err != nil {
		return nil, fmt.Errorf("platform kubeconfig: kubeconfig: %w", err)
	}
	if kctx := raw.Contexts[raw.CurrentContext]; kctx == nil || raw.Clusters[kctx.Cluster] == nil {
		return nil, fmt.Errorf("platform kubeconfig: kubeconfig: context %q has no cluster", raw.CurrentContext)
	}
	return &raw, nil
}

// trimSlash drops a trailing slash of a base URL.
func trimSlash(u string) string { return strings.TrimRight(u, "/") }
