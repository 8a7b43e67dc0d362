// Package external is the platform for a system scaleproof did not deploy:
// an autoscaler that is not ours (or ours, deployed by someone else) that
// serves the console API of Ramen 0.7.5's autoscaling notes and an edge with /g/{group}/z/{zone}/mcp.
// Up only checks that both answer; Down deploys nothing and deletes nothing.
//
// Must not import scenarios/.
package external

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// Config names the system under test.
type Config struct {
	Name       string // the table's Platform column, e.g. "GKE"
	ConsoleURL string
	EdgeURL    string
	KeysFile   string // console keys (JSON, see platform.KeysFile); one per role
	Group      string // the group the scenarios use; the keys file needs a group admin of it
}

// External is a system that is already running.
type External struct{ cfg Config }

var _ platform.Platform = (*External)(nil)

// New validates cfg: both URLs http(s), the keys file readable with one key
// per role (bad input, before anything is contacted).
func New(cfg Config) (*External, error) {
	var missing []string
	for k, v := range map[string]string{"--console-url": cfg.ConsoleURL, "--edge-url": cfg.EdgeURL, "--keys": cfg.KeysFile, "--group": cfg.Group} {
		if v == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("platform external needs %s", strings.Join(missing, ", "))
	}
	for flag, u := range map[string]string{"--console-url": cfg.ConsoleURL, "--edge-url": cfg.EdgeURL} {
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return nil, fmt.Errorf("platform external: %s %q is not an http(s) URL", flag, u)
		}
	}
	if _, err := platform.ReadKeysFile(cfg.KeysFile, cfg.Group); err != nil {
		return nil, fmt.Errorf("platform external: %w", err)
	}
	if cfg.Name == "" {
		cfg.Name = "external"
	}
	return &External{cfg: cfg}, nil
}

// Name is the configured platform name.
func (x *External) Name() string { return x.cfg.Name }

// Up reads the keys and checks that the console and the edge answer /readyz.
func (x *External) Up(ctx context.Context) (platform.Endpoints, error) {
	keys, err := platform.ReadKeysFile(x.cfg.KeysFile, x.cfg.Group)
	if err != nil {
		return platform.Endpoints{}, err
	}
	ep := platform.Endpoints{ConsoleURL: strings.TrimRight(x.cfg.ConsoleURL, "/"), EdgeURL: strings.TrimRight(x.cfg.EdgeURL, "/"), Group: x.cfg.Group, Keys: keys}
	if ok, err := x.check(ctx, ep); !ok {
		return platform.Endpoints{}, err
	}
	return ep, nil
}

func (x *External) check(ctx context.Context, ep platform.Endpoints) (bool, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	for _, u := range []string{ep.ConsoleURL + "/readyz", ep.EdgeURL + "/readyz"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return false, fmt.Errorf("external: %w", err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return false, fmt.Errorf("external: %s: %w", u, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("external: %s answered HTTP %d", u, resp.StatusCode)
		}
	}
	return true, nil
}

// IsUp checks both /readyz.
func (x *External) IsUp(ctx context.Context) (bool, error) {
	keys := platform.Keys{}
	return x.check(ctx, platform.Endpoints{ConsoleURL: x.cfg.ConsoleURL, EdgeURL: x.cfg.EdgeURL, Keys: keys})
}

// Down does nothing: scaleproof did not deploy this system.
func (x *External) Down(context.Context) error { return nil }

// DumpLogs has no logs to copy.
func (x *External) DumpLogs(context.Context, string) error { return nil }

// NoFaultsReason is why the external platform offers no fault action: the
// harness reaches a system it did not deploy only through its console and
// edge URLs, so it can neither list, freeze nor kill the workers nor restart
// the console; scenarios that need one are skipped with this reason.
const NoFaultsReason = "the harness reaches a system it did not deploy only through its console and edge URLs; it cannot list, freeze or kill its workers, nor restart its console"
