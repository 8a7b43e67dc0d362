// Package consoleclient is the harness's client for the console API of
// Ramen 0.7.5's autoscaling notes (the reference console or any autoscaler that serves the same
// API). It returns HTTP statuses as values: scenarios judge them.
//
// Must not import other packages of this module.
package consoleclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/api"
)

// Decision is a zone's last decision as the console reports it.
type Decision struct {
	Action string    `json:"action"`
	From   int       `json:"from"`
	To     int       `json:"to"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// Zone is GET /api/v1/groups/{g}/zones/{z}/workers. Viewers see Count only:
// MaxCount is then nil.
type Zone struct {
	Group        string    `json:"group"`
	Zone         string    `json:"zone"`
	Count        int       `json:"count"`
	MaxCount     *int      `json:"max_count,omitempty"`
	Ready        *int      `json:"ready,omitempty"`
	Starting     *int      `json:"starting,omitempty"`
	LastDecision *Decision `json:"last_decision,omitempty"`
	// LastScale is the last decision that changed the count (nil when the
	// console does not say).
	LastScale *Decision `json:"last_scale,omitempty"`
	// Workers lists the zone's workers as the console last saw them (admins
	// only; nil when the console does not say), the canary marked.
	Workers []Worker `json:"workers,omitempty"`
}

// Worker is one worker of a zone in GET workers.
type Worker struct {
	ID     string `json:"id"`
	Canary bool   `json:"canary"` // the zone's canary: capacity, not part of the count
	Ready  bool   `json:"ready"`
}

// Update is the PUT body; nil fields are left out.
type Update struct {
	MaxCount *int `json:"max_count,omitempty"`
	Count    *int `json:"count,omitempty"`
}

// AuditEntry is one entry of GET /api/v1/audit.
type AuditEntry struct {
	ID     uint64            `json:"id"`
	At     time.Time         `json:"at"`
	Actor  string            `json:"actor"`
	Group  string            `json:"group"`
	Zone   string            `json:"zone"`
	Action string            `json:"action"`
	Tags   map[string]string `json:"tags"`
	Error  string            `json:"error,omitempty"`
}

// Autorebalance is GET/PUT /api/v1/config/autorebalance.
type Autorebalance struct {
	Enabled         bool    `json:"enabled"`
	IntervalSeconds float64 `json:"interval_seconds"`
}

// Client calls one console. Every request is bounded by its timeout.
type Client struct {
	base string
	hc   *http.Client
}

// New returns a client for the console at base, each request bounded by timeout.
func New(base string, timeout time.Duration) *Client {
	return &Client{base: strings.TrimRight(base, "/"), hc: &http.Client{Timeout: timeout}}
}

// SetBase points the client at a console's new address (after a restart).
func (c *Client) SetBase(base string) { c.base = strings.TrimRight(base, "/") }

// CloseIdleConnections closes the client's kept-alive connections, so the
// next request dials the console anew (after it was restarted behind the
// same address).
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// Base is the console's base URL.
func (c *Client) Base() string { return c.base }

func zonePath(g, z string) string {
	return "/api/v1/groups/" + url.PathEscape(g) + "/zones/" + url.PathEscape(z)
}

// GetZone reads a zone as key sees it. It returns the HTTP status; err is
// only for transport or decoding failures.
func (c *Client) GetZone(ctx context.Context, key, g, z string) (Zone, int, error) {
	return doJSON[Zone](ctx, c, http.MethodGet, zonePath(g, z)+"/workers", key, nil)
}

// PutZone sets max and/or count.
func (c *Client) PutZone(ctx context.Context, key, g, z string, u Update) (int, error) {
	return c.do(ctx, http.MethodPut, zonePath(g, z)+"/workers", key, u, nil)
}

// PutZoneView sets max and/or count and returns the zone as the PUT's
// answer shows it (decoded only on 2xx).
func (c *Client) PutZoneView(ctx context.Context, key, g, z string, u Update) (Zone, int, error) {
	return doJSON[Zone](ctx, c, http.MethodPut, zonePath(g, z)+"/workers", key, u)
}

// AutoscaleConfig is GET /api/v1/config/autoscale: the step policy's
// settings as the console runs them (a console that does not expose them
// answers 404; the harness then uses its profile).
type AutoscaleConfig = api.AutoscaleConfig

// GetAutoscaleConfig reads the console's autoscaling settings.
func (c *Client) GetAutoscaleConfig(ctx context.Context, key string) (AutoscaleConfig, int, error) {
	return doJSON[AutoscaleConfig](ctx, c, http.MethodGet, "/api/v1/config/autoscale", key, nil)
}

// GetAutorebalance reads the scheduler's configuration.
func (c *Client) GetAutorebalance(ctx context.Context, key string) (Autorebalance, int, error) {
	return doJSON[Autorebalance](ctx, c, http.MethodGet, "/api/v1/config/autorebalance", key, nil)
}

// Rebalance triggers one decision now.
func (c *Client) Rebalance(ctx context.Context, key, g, z string) (int, error) {
	return c.do(ctx, http.MethodPost, zonePath(g, z)+"/rebalance", key, nil, nil)
}

// SetAutorebalance turns the scheduler on or off.
func (c *Client) SetAutorebalance(ctx context.Context, key string, a Autorebalance) (int, error) {
	return c.do(ctx, http.MethodPut, "/api/v1/config/autorebalance", key, a, nil)
}

// Audit lists audit entries of a group/zone (empty = all the key may see).
func (c *Client) Audit(ctx context.Context, key, g, z string) ([]AuditEntry, int, error) {
	q := url.Values{}
	if g != "" {
		q.Set("group", g)
	}
	if z != "" {
		q.Set("zone", z)
	}
	q.Set("limit", "1000")
	var out struct {
		Entries []AuditEntry `json:"entries"`
	}
	st, err := c.do(ctx, http.MethodGet, "/api/v1/audit?"+q.Encode(), key, nil, &out)
	return out.Entries, st, err
}

// Route is one path of the console's JSON API ({g} a group's name, {z} a
// zone's) and its methods, as GET /api/v1 lists them.
type Route struct {
	Path    string   `json:"path"`
	Methods []string `json:"methods"`
}

// Routes reads the console's API index, GET /api/v1: every path of its JSON
// API and its methods.
func (c *Client) Routes(ctx context.Context, key string) ([]Route, int, error) {
	var out struct {
		Routes []Route `json:"routes"`
	}
	st, err := c.do(ctx, http.MethodGet, "/api/v1", key, nil, &out)
	return out.Routes, st, err
}

// Send sends method path with a raw JSON body (none when body is nil) and
// returns the status: for probes of routes the client has no method for.
func (c *Client) Send(ctx context.Context, method, path, key string, body json.RawMessage) (int, error) {
	var in any
	if body != nil {
		in = body
	}
	return c.do(ctx, method, path, key, in, nil)
}

// Readyz returns the status of GET /readyz.
func (c *Client) Readyz(ctx context.Context) (int, error) {
	return c.do(ctx, http.MethodGet, "/readyz", "", nil, nil)
}

// doJSON sends method path as c.do does and returns the answer decoded as a
// T (decoded only on a 2xx status).
func doJSON[T any](ctx context.Context, c *Client, method, path, key string, in any) (T, int, error) {
	var out T
	st, err := c.do(ctx, method, path, key, in, &out)
	return out, st, err
}

func (c *Client) do(ctx context.Context, method, path, key string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return 0, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}
