// Package fleet is the contract between a platform that owns worker
// processes and the reference system's console and edge.
//
// It plays, for the local platform, the part Kubernetes plays on a cluster:
// Scale is the scale subresource (replicas of one group × zone's worker
// Deployment, with the workers the autoscaler chose to remove, like
// controller.kubernetes.io/pod-deletion-cost), and Endpoints is the
// EndpointSlice list (every worker with its address and readiness).
//
// HTTP shape served by a fleet server (see scenarios/platform/local):
//
//	GET /v1/endpoints                         -> {"zones":[Zone...]}
//	GET /v1/zones/{group}/{zone}              -> Zone
//	PUT /v1/zones/{group}/{zone}/scale        <- ScaleRequest -> Zone
//
// Must not import other packages of this module.
package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Endpoint is one worker of a zone as discovery sees it.
type Endpoint struct {
	ID      string    `json:"id"`      // stable worker name, e.g. "g1-a-3"
	Addr    string    `json:"addr"`    // host:port of the worker's HTTP server
	Ready   bool      `json:"ready"`   // passed its last readiness probe
	Created time.Time `json:"created"` // process start time
	// Canary marks the zone's canary worker: another version run beside the
	// stable workers, taking calls like any of them, not part of Replicas
	// (a scale never starts, stops or picks it).
	Canary bool `json:"canary,omitempty"`
}

// Zone is one group × zone's scale and endpoints.
type Zone struct {
	Group     string     `json:"group"`
	Zone      string     `json:"zone"`
	Replicas  int        `json:"replicas"`  // desired worker processes (stable; a canary is extra)
	Endpoints []Endpoint `json:"endpoints"` // stable workers and the canary, if any
}

// ScaleRequest sets a zone's replicas. Victims, in order, are the workers to
// stop first when Replicas is below the running count; unknown IDs are
// ignored, and the newest workers go after them.
type ScaleRequest struct {
	Replicas int      `json:"replicas"`
	Victims  []string `json:"victims,omitempty"`
}

// Client talks to a fleet server. The zero value is not usable; use New.
type Client struct {
	base string
	hc   *http.Client
}

// New returns a client for the fleet server at base (e.g. "http://127.0.0.1:4100").
// Each request is bounded by timeout.
func New(base string, timeout time.Duration) *Client {
	return &Client{base: base, hc: &http.Client{Timeout: timeout}}
}

// Scale sets replicas of group/zone, creating the zone when it does not exist.
func (c *Client) Scale(ctx context.Context, group, zone string, req ScaleRequest) (Zone, error) {
	var z Zone
	err := c.do(ctx, http.MethodPut, "/v1/zones/"+url.PathEscape(group)+"/"+url.PathEscape(zone)+"/scale", req, &z)
	if err != nil {
		return Zone{}, fmt.Errorf("fleet: scale %s/%s to %d: %w", group, zone, req.Replicas, err)
	}
	return z, nil
}

// Zone reads one zone. A zone the fleet does not know is returned with
// Replicas 0 and no endpoints.
func (c *Client) Zone(ctx context.Context, group, zone string) (Zone, error) {
	var z Zone
	if err := c.do(ctx, http.MethodGet, "/v1/zones/"+url.PathEscape(group)+"/"+url.PathEscape(zone), nil, &z); err != nil {
		return Zone{}, fmt.Errorf("fleet: read %s/%s: %w", group, zone, err)
	}
	return z, nil
}

// All lists every zone with its endpoints.
func (c *Client) All(ctx context.Context) ([]Zone, error) {
	var out struct {
		Zones []Zone `json:"zones"`
	}
	if err := c.do(ctx, http.MethodGet, "/v1/endpoints", nil, &out); err != nil {
		return nil, fmt.Errorf("fleet: list endpoints: %w", err)
	}
	return out.Zones, nil
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("decode %s %s: %w", method, path, err)
		}
	}
	return nil
}
