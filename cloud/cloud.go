// Package cloud is what the GKE, EKS and AKS platforms share: the Provider
// interface each cloud implements with its own Go SDK (cloud/gke, cloud/eks,
// cloud/aks), the labels that mark every resource a run creates with its run
// id and expiry, and the options the command line fills in.
//
// A cloud platform is "create or adopt a cluster, push the image, make
// credentials" in front of the kubeconfig platform (scenarios/platform/
// kubeconfig) that kind already proves, and a janitor behind it so that no
// cluster is ever left running: Up refuses to start without a TTL, every
// resource carries LabelRunID and LabelExpiresAt, and `scaleproof cloud
// janitor` deletes every scaleproof resource past its expiry (never a foreign
// one, never an adopted cluster).
//
// No cloud is reachable from the machines this project is built on: every
// call of every Provider is tested against a local fake of that cloud's
// REST/JSON API (Options.Endpoint), never against the cloud itself.
// docs/cloud.md says which paths only fakes have seen.
//
// Must not import scenarios/ (only scenarios/platform and its kubeconfig
// platform, as kind/ does).
package cloud

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
)

// The labels (GCP labels, AWS tags, Azure tags) on every resource a run
// creates. Keys and values keep to GCP's label rules (lower-case letters,
// digits, '-' and '_', at most 63 characters), which the other two clouds'
// tags also accept.
const (
	// LabelManagedBy is set to ManagedByValue: the janitor considers only
	// resources that carry it, so a foreign resource is never touched.
	LabelManagedBy = "scaleproof-managed-by"
	ManagedByValue = "scaleproof"
	// LabelRunID is the run id (RunIDLabelValue of it).
	LabelRunID = "scaleproof-run-id"
	// LabelExpiresAt is the expiry time in Unix seconds (decimal): created
	// at + TTL. Past it, `cloud janitor` deletes the resource.
	LabelExpiresAt = "scaleproof-expires-at"
)

// Options is what the command line says about a cloud run. Each Provider
// reads the fields of its cloud and refuses (an error naming the flag) when
// one it needs is empty.
type Options struct {
	// Project and Location: GKE (--project, --location: a region or zone).
	// Location is AKS's too (--location, an Azure region).
	Project, Location string
	// Region: EKS (--region).
	Region string
	// Subscription and ResourceGroup: AKS (--subscription, --resource-group).
	Subscription, ResourceGroup string
	// Cluster, when set, is an existing cluster to adopt (--cluster): Up
	// creates no cluster and Down never deletes it. "" creates one named
	// ClusterName(RunID).
	Cluster string
	// RunID names and labels what the run creates.
	RunID string
	// TTL is how long what the run creates may live (--ttl, required: Up
	// refuses to start without it); the janitor deletes it after.
	TTL time.Duration
	// NodeMin, NodeMax bound the node pool the cloud's cluster autoscaler
	// grows (0, 0: the provider's defaults, 1 and 4). MachineType "" is the
	// provider's default small type.
	NodeMin, NodeMax int
	MachineType      string
	// Endpoint overrides the cloud's API base URL (tests: a local fake on
	// 127.0.0.1); "" is the real cloud. RegistryEndpoint likewise for the
	// image registry's host.
	Endpoint, RegistryEndpoint string
	// OperationTimeout bounds each wait on a long-running operation (cluster
	// create/delete, node pool create); 0 is 25 minutes. PollInterval is how
	// often it is polled; 0 is 10 s.
	OperationTimeout, PollInterval time.Duration
	Now                            func() time.Time // nil: time.Now
	Log                            *slog.Logger     // nil: discard
	Out                            io.Writer        // progress lines; nil: discard
}

// The defaults of Options' zero values, the same for every provider.
const (
	DefaultNodeMin          = 1
	DefaultNodeMax          = 4
	DefaultOperationTimeout = 25 * time.Minute
	DefaultPollInterval     = 10 * time.Second
)

// WithDefaults is o with its zero values filled in as every provider reads
// them: NodeMin..NodeMax DefaultNodeMin..DefaultNodeMax when both are 0,
// MachineType the provider's machineType when "", OperationTimeout and
// PollInterval their defaults when not positive, Now time.Now, Log a
// logger that discards and Out io.Discard when nil. It checks nothing: each
// provider refuses the bounds it cannot use.
func (o Options) WithDefaults(machineType string) Options {
	if o.NodeMin == 0 && o.NodeMax == 0 {
		o.NodeMin, o.NodeMax = DefaultNodeMin, DefaultNodeMax
	}
	if o.OperationTimeout <= 0 {
		o.OperationTimeout = DefaultOperationTimeout
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	o.MachineType = cmp.Or(o.MachineType, machineType)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	return o
}

// Resource is one thing in a cloud that a run created or the janitor found:
// a cluster, a node pool or node group, an image repository, an IAM role, a
// resource group.
type Resource struct {
	Kind   string            // "cluster", "node pool", "node group", "repository", "role", "resource group"
	Name   string            // the cloud's short name
	ID     string            // the cloud's full id (a self link, an ARN, an Azure resource id)
	Labels map[string]string // its labels or tags as the cloud returned them
}

// Ours reports whether r carries LabelManagedBy = ManagedByValue.
func (r Resource) Ours() bool { return r.Labels[LabelManagedBy] == ManagedByValue }

// ExpiresAt is r's LabelExpiresAt; ok false when it has none or it is not
// a number (the janitor then leaves it, and says so).
func (r Resource) ExpiresAt() (t time.Time, ok bool) {
	s, found := r.Labels[LabelExpiresAt]
	if !found {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}

func (r Resource) String() string { return fmt.Sprintf("%s %s", r.Kind, r.Name) }

// Call is one API call a Provider makes, for `cloud plan` and for the
// closing list of calls beside their tests: Service "container.googleapis.com",
// Method "projects.locations.clusters.create", What a line on its request.
type Call struct {
	Service, Method, What string
}

// Plan is what Up would create and the calls it would make, changing nothing.
type Plan struct {
	Resources []Resource
	Calls     []Call
}

// Cluster is a cluster Up created or adopted.
type Cluster struct {
	Name string
	// Server is the API server's https URL; CAData its CA bundle (PEM).
	Server string
	CAData []byte
	// Adopted: the cluster was there before the run (Options.Cluster);
	// Down never deletes it.
	Adopted bool
	// Created lists what this run created, in creation order (Down deletes
	// in reverse). After a failed Create it still lists what exists, so
	// Down deletes it.
	Created []Resource
}

// Registry is where the run's image goes and how to authenticate there.
type Registry struct {
	// Repository is host/path without tag ("us-docker.pkg.dev/p/scaleproof/scaleproof-ref").
	Repository string
	Auth       authn.Authenticator
	// Created lists the repository if this run created it.
	Created []Resource
}

// Token is a bearer token for the cluster's API server.
type Token struct {
	Value  string
	Expiry time.Time // zero: does not expire
}

// Provider is one cloud's control plane as a cloud platform uses it. Every
// method is one SDK call or a wait on one long-running operation; errors
// are *Error where the cloud said why (quota, permission), so the command
// exits 3 with the cloud's reason and, for a permission error, the
// permission it lacked.
type Provider interface {
	// Name is the Platform column ("GKE", "EKS", "AKS").
	Name() string
	// Plan lists what Create and EnsureRegistry would make, and the calls.
	Plan(o Options) Plan
	// Create creates a cluster named name (labelled with labels) whose node
	// pool the cloud's cluster autoscaler can grow between NodeMin and
	// NodeMax, and waits until it is running. On error the Cluster's
	// Created still lists what exists.
	Create(ctx context.Context, name string, labels map[string]string) (Cluster, error)
	// Adopt reads an existing cluster (Adopted true, Created empty).
	Adopt(ctx context.Context, name string) (Cluster, error)
	// Token makes a bearer token for c's API server in-process (an oauth2
	// token, an EKS presigned STS token, an AAD token), never with an auth
	// plugin binary.
	Token(ctx context.Context, c Cluster) (Token, error)
	// EnsureRegistry finds or creates the repository the image is pushed to
	// (labelled with labels when created) and returns its auth.
	EnsureRegistry(ctx context.Context, labels map[string]string) (Registry, error)
	// List returns every resource of the kinds the provider creates, in
	// the options' project/region/subscription, ours and foreign, with
	// their labels (the janitor filters).
	List(ctx context.Context) ([]Resource, error)
	// Delete deletes one resource and waits until it is gone; a resource
	// already gone is not an error.
	Delete(ctx context.Context, r Resource) error
}

// Error is a cloud's refusal in the user's words.
type Error struct {
	Op         string // "create cluster scaleproof-20261202-0310"
	Kind       string // "quota", "permission", "timeout", "not found", "other"
	Permission string // for Kind "permission": the permission or role it lacked, when the cloud names it
	Msg        string // the cloud's own message
	Err        error
}

func (e *Error) Error() string {
	s := e.Op + ": " + e.Kind
	if e.Permission != "" {
		s += " (missing permission " + e.Permission + ")"
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Classified reports whether err needs no mapping to an *Error by a
// provider: it is nil, or it already is (or wraps) an *Error.
func Classified(err error) bool {
	var ce *Error
	return err == nil || errors.As(err, &ce)
}

// Labels are the labels of everything a run creates: managed-by, the run
// id (RunIDLabelValue) and the expiry (now + ttl, Unix seconds).
func Labels(runID string, now time.Time, ttl time.Duration) map[string]string {
	return map[string]string{
		LabelManagedBy: ManagedByValue,
		LabelRunID:     RunIDLabelValue(runID),
		LabelExpiresAt: strconv.FormatInt(now.Add(ttl).Unix(), 10),
	}
}

// RunIDLabelValue is runID as a label value: lower case, every character
// other than a letter, digit, '-' or '_' made '-', at most 63 characters.
func RunIDLabelValue(runID string) string {
	b := make([]byte, 0, len(runID))
	for _, r := range []byte(runID) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b = append(b, r)
		case r >= 'A' && r <= 'Z':
			b = append(b, r+'a'-'A')
		default:
			b = append(b, '-')
		}
	}
	if len(b) > 63 {
		b = b[:63]
	}
	return string(b)
}

// ClusterName is the name of the cluster a run creates: "scaleproof-" and
// the run id's label value, at most 40 characters (EKS and AKS allow
// fewer than GKE), never ending in '-' or '_'.
func ClusterName(runID string) string {
	s := "scaleproof-" + RunIDLabelValue(runID)
	if len(s) > 40 {
		s = s[:40]
	}
	for len(s) > 0 && (s[len(s)-1] == '-' || s[len(s)-1] == '_') {
		s = s[:len(s)-1]
	}
	return s
}
