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
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
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
	// The spike scenario reads hpa zones' signal from it.
	PrometheusURL string
	// Canary: every zone runs a canary worker beside its stable workers
	// (the reference system's --canary), and the edge's /metrics counts
	// each track's answers (scaleproof_edge_worker_answers_total), from
	// which the scenarios report the canary's share of calls.
	Canary bool
	// Target is set when the scale target is not the console's (--target
	// hpa or keda): the target scenarios then judge it through
	// scenarios/target, and PrometheusURL is the Prometheus its trigger
	// reads (keda).
	Target *TargetRef
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

// NewKeys makes a run's four keys, each a fresh random secret (its role's
// prefix, "_", 32 hex digits): root, ops-<group> (admin of group), viewer
// and mcp.
func NewKeys(group string) Keys {
	key := func(prefix string) string {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		return prefix + "_" + hex.EncodeToString(b)
	}
	return Keys{
		SuperAdmin: Key{Name: "root", Key: key("sa"), Role: "super_admin"},
		GroupAdmin: Key{Name: "ops-" + group, Key: key("ga"), Role: "group_admin", Groups: []string{group}},
		Viewer:     Key{Name: "viewer", Key: key("vw"), Role: "viewer"},
		MCPUser:    Key{Name: "mcp", Key: key("mcp"), Role: "mcp_user"},
	}
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

// Worker is one worker of a zone as a platform's fault actions see it.
type Worker struct {
	ID string `json:"id"`
	// Addr is host:port of the worker's own HTTP server (POST /mcp,
	// GET /metrics); "" when the platform cannot reach workers directly.
	Addr string `json:"addr,omitempty"`
	// Proxied: Addr is "" but the platform reads the worker's /metrics
	// for the harness (MetricsReader): on Kubernetes, through the API
	// server's proxy to the pod.
	Proxied bool `json:"proxied,omitempty"`
	Ready   bool `json:"ready"`
	// Canary marks the zone's canary worker (Endpoints.Canary): beside
	// the count's workers, not one of them.
	Canary bool `json:"canary,omitempty"`
}

// Part names a part of the system under test a fault action restarts.
type Part string

// The parts Restart knows.
const (
	PartConsole Part = "console"
)

// Faulter is the optional interface of a platform that can break the system
// under test on purpose, for the scenarios that check what an autoscaler
// does in an outage ("an outage never scales in", "no call runs twice", a
// console restarted in the middle of a cooldown, no call to a worker that
// is not ready). A platform that offers
// only some actions returns a *NotOfferedError from the others; a platform
// that offers none does not implement Faulter (see FaulterOf). A scenario
// whose action is not offered is skipped with the reason, never passed.
type Faulter interface {
	// Workers lists the zone's workers, oldest first.
	Workers(ctx context.Context, group, zone string) ([]Worker, error)
	// Freeze makes a worker unreachable without ending it (SIGSTOP: its
	// connections stay open, nothing answers) until Thaw.
	Freeze(ctx context.Context, group, zone, id string) error
	// Thaw lets a frozen worker run again (SIGCONT).
	Thaw(ctx context.Context, group, zone, id string) error
	// Kill ends a worker at once, without a drain (SIGKILL); the platform
	// replaces it as a ReplicaSet would.
	Kill(ctx context.Context, group, zone, id string) error
	// Restart stops a part (SIGTERM and its drain) and starts it again on
	// the same address and state, as a rollout restart of one pod behind a
	// Service would.
	Restart(ctx context.Context, part Part) error
	// FailReadiness makes a listed worker fail its readiness probe (its
	// /readyz answers 503) while it keeps answering calls on /mcp, as a
	// pod whose readiness check fails under load, until PassReadiness. It
	// returns once the worker's /readyz answers 503, with the platform's
	// readiness timing (how long until its listing and the edge follow).
	FailReadiness(ctx context.Context, group, zone, id string) (Readiness, error)
	// PassReadiness ends FailReadiness: the worker's /readyz answers 200
	// again (it returns once it does).
	PassReadiness(ctx context.Context, group, zone, id string) error
}

// Readiness is how a platform follows a worker's readiness, the bounds of
// the routing facts (a worker whose readiness fails gets no new calls once
// the platform lists it not ready and the edge has re-read the listing).
type Readiness struct {
	// ProbePeriod is how often each worker's /readyz is probed (a
	// readinessProbe's periodSeconds).
	ProbePeriod time.Duration `json:"probe_period"`
	// FailureThreshold is how many failed probes in a row list a worker
	// not ready (failureThreshold; a success lists it ready again).
	FailureThreshold int `json:"failure_threshold"`
	// RouteInterval is how often the edge re-reads the listing of workers
	// and their readiness (its discovery interval): the longest a worker
	// listed not ready may still be picked for new calls.
	RouteInterval time.Duration `json:"route_interval"`
}

// ListingLag is the longest from a worker's /readyz turning 503 to the
// platform listing it not ready: FailureThreshold probe periods.
func (r Readiness) ListingLag() time.Duration {
	return time.Duration(r.FailureThreshold) * r.ProbePeriod
}

// ErrNotOffered is what every *NotOfferedError matches with errors.Is.
var ErrNotOffered = errors.New("fault action not offered by the platform")

// NotOfferedError says a platform cannot perform a fault action, and why.
type NotOfferedError struct {
	Platform string // "external"
	Action   string // "freeze a worker"
	Reason   string // "the harness reaches the system only through its console and edge URLs"
}

func (e *NotOfferedError) Error() string {
	return fmt.Sprintf("platform %s cannot %s: %s", e.Platform, e.Action, e.Reason)
}

// Is makes errors.Is(err, ErrNotOffered) true.
func (e *NotOfferedError) Is(target error) bool { return target == ErrNotOffered }

// FaulterOf returns p's fault actions: p itself when it implements Faulter,
// else a Faulter whose every action returns a *NotOfferedError with reason
// (or a generic one when reason is "").
func FaulterOf(p Platform, reason string) Faulter {
	if f, ok := p.(Faulter); ok {
		return f
	}
	if reason == "" {
		reason = "it offers no fault actions"
	}
	return NoFaults{Platform: p.Name(), Reason: reason}
}

// NoFaults is the Faulter of a platform that offers no fault action.
type NoFaults struct{ Platform, Reason string }

var _ Faulter = NoFaults{}

func (n NoFaults) no(action string) error {
	return &NotOfferedError{Platform: n.Platform, Action: action, Reason: n.Reason}
}

// Workers returns a *NotOfferedError.
func (n NoFaults) Workers(context.Context, string, string) ([]Worker, error) {
	return nil, n.no("list a zone's workers")
}

// Freeze returns a *NotOfferedError.
func (n NoFaults) Freeze(context.Context, string, string, string) error {
	return n.no("freeze a worker")
}

// Thaw returns a *NotOfferedError.
func (n NoFaults) Thaw(context.Context, string, string, string) error { return n.no("thaw a worker") }

// Kill returns a *NotOfferedError.
func (n NoFaults) Kill(context.Context, string, string, string) error { return n.no("kill a worker") }

// Restart returns a *NotOfferedError.
func (n NoFaults) Restart(_ context.Context, part Part) error {
	return n.no(RestartAction(part))
}

// FailReadiness returns a *NotOfferedError.
func (n NoFaults) FailReadiness(context.Context, string, string, string) (Readiness, error) {
	return Readiness{}, n.no("fail a worker's readiness")
}

// PassReadiness returns a *NotOfferedError.
func (n NoFaults) PassReadiness(context.Context, string, string, string) error {
	return n.no("pass a worker's readiness again")
}

// MetricsReader is the optional interface of a platform that lists
// workers it cannot address directly (Worker.Proxied) but whose own
// /metrics it can read for the harness. On Kubernetes that is the API
// server's proxy to the pod's port, the pods/proxy subresource:
// GET /api/v1/namespaces/{namespace}/pods/{name}:{port}/proxy/{path}
// (Kubernetes API reference, "Pod v1 core", Proxy Operations; client-go
// CoreV1().Pods(ns).ProxyGet). The traffic goes only to the workers the
// run deployed.
type MetricsReader interface {
	// WorkerMetrics returns the body of worker id's GET /metrics (the
	// Prometheus text format), at most 4 MiB. A platform that cannot read
	// it (the identity may not proxy to pods) returns a *NotOfferedError.
	WorkerMetrics(ctx context.Context, group, zone, id string) ([]byte, error)
}

// Offerer is the optional interface of a Faulter that offers only some of
// its actions (kubeconfig: the console's restart): Offers returns nil when
// action, named as NotOfferedError.Action names it ("restart the
// console", RestartAction), is offered, else a *NotOfferedError saying
// why. A scenario asks before it starts, so one whose action is not
// offered is skipped before it changes anything.
type Offerer interface {
	Offers(action string) error
}

// RestartAction is the action Restart(part) is, as Offers and
// NotOfferedError name it: "restart the console".
func RestartAction(part Part) string { return "restart the " + string(part) }

// LoadSharder is the optional interface of a platform that can spread a
// load over many load generators at once: on Kubernetes, an Indexed Job of
// one pod per shard (kubeconfig, kind). Each pod runs `scaleproof
// load-shard` with Args, reads its index from JOB_COMPLETION_INDEX, runs
// its share of the load from the common start time in Args, and writes its
// result to its log; the platform hands each shard's log back and the
// harness merges them (scenarios/load.MergeShards). A platform whose load
// always runs in the harness (local, external) does not implement it.
type LoadSharder interface {
	// ShardEdgeURL is the edge's base URL as the shards' pods reach it
	// (inside the cluster), e.g. http://10.96.12.7:80.
	ShardEdgeURL(ctx context.Context) (string, error)
	// RunLoadShards runs job and returns one ShardOutput per shard, by
	// index, once every shard has ended (succeeded, failed, or given up on
	// at job.Timeout). The error is for a job that could not be run at all
	// (bad job, objects not created); a shard that failed is a ShardOutput
	// with its Failure, never an error.
	RunLoadShards(ctx context.Context, job ShardJob) ([]ShardOutput, error)
}

// ShardJob is one distributed load.
type ShardJob struct {
	// Name names the load's objects: a DNS label of at most 52 characters,
	// unique in the run.
	Name string
	// Shards is the number of shards (pods), >= 1.
	Shards int
	// Args are `scaleproof load-shard`'s arguments, the same for every
	// shard.
	Args []string
	// Stop, when closed, ends the load early: no iteration starts any more
	// and calls in flight get the profile's graceful stop, as a local
	// load's Stop; the shards then report what they measured.
	Stop <-chan struct{}
	// Timeout bounds the whole job, from its creation to the last shard's
	// end (start lead, profile, graceful stop and a margin included).
	Timeout time.Duration
}

// ShardOutput is what a platform knows of one shard after the job.
type ShardOutput struct {
	Index int    // 0-based, JOB_COMPLETION_INDEX
	Pod   string // the pod that ran it ("" when none was made)
	// Log is the pod's log (stdout and stderr), nil when it could not be read.
	Log []byte
	// Failure says why the shard ended badly, as the cluster tells it
	// ("pod failed: OOMKilled (exit code 137)", "not started within 2m:
	// ErrImageNeverPull ..."); "" when its pod succeeded. A shard that
	// succeeded may still have no usable result in Log: the harness checks.
	Failure string
}

// TargetRef is where a scale target that the reference console does not own
// lives (--target hpa or keda): the Deployment, the autoscaler's objects,
// the credentials of the two roles, and where its load goes. Platforms that
// deploy such a target fill it in Endpoints.Target; the console's fields of
// Endpoints are then empty.
type TargetRef struct {
	// Kind is "hpa" or "keda"; Workload "worker" (the reference worker
	// Deployment) or "queue" (the query scheduler and its queriers, the
	// queriers being the scale target).
	Kind     string `json:"kind"`
	Workload string `json:"workload"`
	// Namespace, Deployment (the scale target), HPA (for keda: the HPA
	// KEDA made, keda-hpa-<ScaledObject>) and ScaledObject ("" for hpa).
	Namespace    string `json:"namespace"`
	Deployment   string `json:"deployment"`
	HPA          string `json:"hpa"`
	ScaledObject string `json:"scaled_object,omitempty"`
	// Kubeconfig is a kubeconfig file with the run's own (cluster-admin
	// or namespace-admin) credentials; AdminKubeconfig and
	// ViewerKubeconfig are kubeconfig files whose user is a ServiceAccount
	// token of the admin and the viewer role (RBAC: the admin may patch
	// the HPA, ScaledObject and deployments/scale; the viewer may only
	// get, list and watch them). All are files the platform wrote into the
	// artifacts folder (mode 0600).
	Kubeconfig       string `json:"kubeconfig"`
	AdminKubeconfig  string `json:"admin_kubeconfig"`
	ViewerKubeconfig string `json:"viewer_kubeconfig"`
	// LoadURL is the base URL calls go to ({LoadURL}/mcp): the worker
	// Service, or the scheduler Service for the queue workload; on kind
	// a NodePort mapped to 127.0.0.1.
	LoadURL string `json:"load_url"`
}

// TargetSpec is what a Kubernetes platform deploys (or adopts) as a scale
// target that the reference console does not own (--target, --workload);
// nil deploys the reference system with its console, as always.
type TargetSpec struct {
	// Kind is "hpa" or "keda"; Workload "worker" or "queue".
	Kind     string
	Workload string
	// Adopt, when set, is the user's own scale target, judged as it is
	// (--platform kubeconfig --target hpa --namespace N --deployment D
	// --hpa H): nothing is deployed and the namespace is never deleted;
	// only the two roles' ServiceAccounts and Roles are made (and removed
	// by Down).
	Adopt *Adopt
}

// Adopt names a scale target that already runs.
type Adopt struct {
	Namespace, Deployment, HPA, ScaledObject string
	// LoadURL is where its calls go ({LoadURL}/mcp).
	LoadURL string
}
