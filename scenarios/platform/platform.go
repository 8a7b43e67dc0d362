// Package platform is the one interface every place the reference system can
// run behind (local processes, kind, an existing cluster, GKE/EKS/AKS, or an
// autoscaler that is not ours), modelled on kubetest2's deployer: Up, Down,
// IsUp, DumpLogs. A scenario never asks which platform it runs on; it only
// uses the Endpoints that Up returns.
//
// Must not import scenarios/ (scenarios import platforms, not the reverse).
package platform

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
)

// Key is one API key of the console under test.
type Key struct {
	Name   string   `json:"name"`
	Key    string   `json:"key"`
	Role   string   `json:"role"` // super_admin | group_admin | viewer | mcp_user
	Groups []string `json:"groups,omitempty"`
}

// Keys are the console API keys a run uses, one per role the scenarios need.
type Keys struct {
	SuperAdmin Key
	GroupAdmin Key // admin of Endpoints.Group
	Viewer     Key
	MCPUser    Key
}

// Endpoints is what a scenario talks to.
type Endpoints struct {
	ConsoleURL string // base URL of the console API, e.g. http://127.0.0.1:4101
	EdgeURL    string // base URL of the edge; calls go to {EdgeURL}/g/{group}/z/{zone}/mcp
	Group      string // the group the scenarios use (GroupAdmin administers it)
	Keys       Keys
	// PrometheusURL is a Prometheus that scrapes the system under test (the
	// edge's in-flight summary, the console's zone gauges); "" when none.
	// The spike scenario reads hpa zones' signal from it (issue 3).
	PrometheusURL string
}

// Platform brings the system under test up and down.
type Platform interface {
	// Name is the platform's name as reports show it ("local", "kind", "GKE" ...).
	Name() string
	// Up deploys and waits until the console and edge are ready.
	Up(ctx context.Context) (Endpoints, error)
	// Down tears everything down. It is safe to call more than once and
	// after a failed Up, and must run on error and on Ctrl-C.
	Down(ctx context.Context) error
	// IsUp reports whether the system answers.
	IsUp(ctx context.Context) (bool, error)
	// DumpLogs copies the system's logs into dir before anything is deleted.
	DumpLogs(ctx context.Context, dir string) error
}

// KeysFile is the console's --keys file shape.
type KeysFile struct {
	Keys []Key `json:"keys"`
}

// All lists the keys in a fixed order.
func (k Keys) All() []Key { return []Key{k.SuperAdmin, k.GroupAdmin, k.Viewer, k.MCPUser} }

// WriteKeysFile writes keys as the console's JSON keys file (mode 0600).
func WriteKeysFile(path string, k Keys) error {
	b, err := json.MarshalIndent(KeysFile{Keys: k.All()}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("write keys file: %w", err)
	}
	return nil
}

// ReadKeysFile reads a keys file and picks one key per role (the first of
// each role; the group admin must administer group).
func ReadKeysFile(path, group string) (Keys, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Keys{}, fmt.Errorf("read keys file: %w", err)
	}
	var f KeysFile
	if err := json.Unmarshal(b, &f); err != nil {
		return Keys{}, fmt.Errorf("keys file %s: %w", path, err)
	}
	var k Keys
	for _, key := range f.Keys {
		switch key.Role {
		case "super_admin":
			if k.SuperAdmin.Key == "" {
				k.SuperAdmin = key
			}
		case "group_admin":
			for _, g := range key.Groups {
				if g == group && k.GroupAdmin.Key == "" {
					k.GroupAdmin = key
				}
			}
		case "viewer":
			if k.Viewer.Key == "" {
				k.Viewer = key
			}
		case "mcp_user":
			if k.MCPUser.Key == "" {
				k.MCPUser = key
			}
		}
	}
	for role, key := range map[string]Key{"super_admin": k.SuperAdmin, "group_admin of " + group: k.GroupAdmin, "viewer": k.Viewer, "mcp_user": k.MCPUser} {
		if key.Key == "" {
			return Keys{}, fmt.Errorf("keys file %s: no %s key", path, role)
		}
	}
	return k, nil
}
