package kubeconfig_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/scenarios/platform/kubeconfig"
)

const img = "scaleproof.local/scaleproof-ref:sha-0123456789ab"

// kubeconfigFile writes a kubeconfig for a server nothing listens on: New
// must not contact it.
func kubeconfigFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	err := os.WriteFile(p, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: kind-x, context: {cluster: c, user: u}}, {name: other, context: {cluster: c, user: u}}]
current-context: kind-x
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNewBadInput(t *testing.T) {
	kc := kubeconfigFile(t)
	good := kubeconfig.Config{Kubeconfig: kc, Profile: "quick", Image: img, Group: "g"}
	for _, tc := range []struct {
		name string
		edit func(*kubeconfig.Config)
		want string
	}{
		{"latest", func(c *kubeconfig.Config) { c.Image = "scaleproof.local/scaleproof-ref:latest" }, "never :latest"},
		{"profile", func(c *kubeconfig.Config) { c.Profile = "slow" }, "profile"},
		{"namespace", func(c *kubeconfig.Config) { c.Namespace = "Not_OK" }, "namespace"},
		{"group", func(c *kubeconfig.Config) { c.Group = "" }, "group"},
		{"non-loopback node host", func(c *kubeconfig.Config) { c.NodeHost, c.ConsoleHostPort, c.EdgeHostPort = "10.0.0.5", 1, 2 }, "loopback"},
		{"node host without ports", func(c *kubeconfig.Config) { c.NodeHost = "127.0.0.1" }, "host port"},
		{"missing kubeconfig", func(c *kubeconfig.Config) { c.Kubeconfig = filepath.Join(t.TempDir(), "nope") }, "nope"},
		{"unknown context", func(c *kubeconfig.Config) { c.Context = "ghost" }, "ghost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			_, err := kubeconfig.New(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want an error naming %q", err, tc.want)
			}
		})
	}
	p, err := kubeconfig.New(good)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "kubeconfig" || p.Namespace() != "scaleproof" {
		t.Errorf("name %q namespace %q", p.Name(), p.Namespace())
	}
	if up, err := p.IsUp(context.Background()); up || err != nil {
		t.Errorf("IsUp before Up = %v, %v", up, err)
	}
	c := good
	c.Context, c.NodeHost, c.ConsoleHostPort, c.EdgeHostPort, c.Name = "other", "127.0.0.1", 30081, 30080, "kind"
	if p, err := kubeconfig.New(c); err != nil || p.Name() != "kind" {
		t.Errorf("New(other context, node host) = %v", err)
	}
}
