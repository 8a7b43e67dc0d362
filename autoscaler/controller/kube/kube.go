package kube

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/edge"
	"github.com/scaleproof/scaleproof/autoscaler/fleet"
)

// Labels and annotations shared with the manifests in deploy/.
const (
	LabelGroup      = "scaleproof.dev/group"
	LabelZone       = "scaleproof.dev/zone"
	LabelComponent  = "app.kubernetes.io/component"
	ComponentWorker = "worker"
	// LabelTrack marks a zone's canary pods and Deployment (TrackCanary).
	// The Service selects on the other labels, so the canary's pods are
	// endpoints of the zone like the stable ones.
	LabelTrack  = "scaleproof.dev/track"
	TrackCanary = "canary"

	// AnnotationDeletionCost is read by the ReplicaSet controller: among the
	// pods it may remove, the lowest cost goes first.
	AnnotationDeletionCost = "controller.kubernetes.io/pod-deletion-cost"
	// VictimDeletionCost is the cost set on the pods chosen for removal.
	VictimDeletionCost = "-1000"

	// PortName is the worker Service's port that Endpoint.Addr uses.
	PortName = "http"
)

// hashLen is the number of hex digits DeploymentName appends when the plain
// name cannot be used.
const hashLen = 10

// DeploymentName returns the name of the worker Deployment (and its headless
// Service) of group × zone: "worker-<group>-<zone>" when that is a DNS-1123
// label (lowercase alphanumerics and '-', at most 63 characters). Otherwise
// (upper case, '.', '_' or too long) the name is lowercased, '.' and '_'
// become '-', it is cut to fit, and "-" plus the first 10 hex digits of a
// SHA-256 of (group, zone) are appended, so distinct pairs keep distinct
// names. group and zone must be valid controller names (controller.ValidName).
//
// A '-' inside group makes the plain name ambiguous ("worker-a-b-c" is both
// a-b × c and a × b-c); Scale and Endpoints check the objects' group and zone
// labels, so such a clash is an error rather than the wrong zone.
func DeploymentName(group, zone string) (string, error) {
	if !controller.ValidName(group) || !controller.ValidName(zone) {
		return "", fmt.Errorf("kube: invalid group %q or zone %q", group, zone)
	}
	plain := "worker-" + group + "-" + zone
	if len(validation.IsDNS1123Label(plain)) == 0 {
		return plain, nil
	}
	sum := sha256.Sum256([]byte(group + "\x00" + zone))
	suffix := "-" + hex.EncodeToString(sum[:])[:hashLen]
	base := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		default: // '.' and '_', the only others ValidName lets through
			return '-'
		}
	}, plain)
	if limit := validation.DNS1123LabelMaxLength - len(suffix); len(base) > limit {
		base = base[:limit]
	}
	name := strings.TrimRight(base, "-") + suffix
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		// Unreachable for valid names: base starts with "worker-".
		return "", fmt.Errorf("kube: name %q for %s/%s: %s", name, group, zone, strings.Join(errs, "; "))
	}
	return name, nil
}

// Target scales and discovers the workers of one namespace. It is safe for
// concurrent use. The zero value is not usable; use New.
type Target struct {
	client   kubernetes.Interface
	ns       string
	log      *slog.Logger
	template string // the worker PodTemplate; "" creates nothing
	canary   bool   // WithCanary: each zone also runs a canary Deployment

	mu sync.Mutex
	// created caches pod creation times (and whether the pod is a canary)
	// per Service name, then per pod UID; each listing replaces its
	// Service's entry with the pods it saw.
	created map[string]map[types.UID]podInfo
}

// podInfo is what discovery keeps of a pod: its creation time and whether
// it is the zone's canary (LabelTrack).
type podInfo struct {
	at     time.Time
	canary bool
}

var (
	_ controller.ScaleTarget = (*Target)(nil)
	_ controller.Discovery   = (*Target)(nil)
	_ edge.Discovery         = (*Target)(nil)
)

// Option configures a Target.
type Option func(*Target)

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(t *Target) { t.log = l } }

// New returns a Target for the workers in namespace, reached through client
// (a real clientset in the cluster, the fake clientset in tests).
func New(client kubernetes.Interface, namespace string, opts ...Option) *Target {
	t := &Target{
		client:  client,
		ns:      namespace,
		log:     slog.New(slog.DiscardHandler),
		created: make(map[string]map[types.UID]podInfo),
	}
	for _, o := range opts {
		o(t)
	}
	return t
}

// Scale sets the replicas of the group × zone worker Deployment through its
// scale subresource. On a scale-in, the first existing victims (as many as
// the replicas removed) get the victim deletion cost first, so the
// ReplicaSet removes those pods; unknown victims are skipped and the
// ReplicaSet picks the rest. If the scale cannot be updated, the annotations
// set are removed again (best effort).
func (t *Target) Scale(ctx context.Context, group, zone string, replicas int, victims []string) error {
	name, err := DeploymentName(group, zone)
	if err != nil {
		return err
	}
	if replicas < 0 {
		return fmt.Errorf("kube: scale deployment %s/%s to %d: negative replicas", t.ns, name, replicas)
	}
	dep, err := t.client.AppsV1().Deployments(t.ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && t.template != "" {
		err = t.createWorkers(ctx, group, zone, name, replicas)
		if err == nil {
			return nil
		}
		if errors.Is(err, errAlreadyExists) { // created meanwhile: scale it
			dep, err = t.client.AppsV1().Deployments(t.ns).Get(ctx, name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("kube: get deployment %s/%s: %w", t.ns, name, err)
	}
	if err := checkLabels(dep.Labels, group, zone); err != nil {
		return fmt.Errorf("kube: deployment %s/%s: %w", t.ns, name, err)
	}
	if replicas > 0 {
		if err := t.ensureCanary(ctx, group, zone, dep); err != nil {
			return err
		}
	}

	var marked []string
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sc, err := t.client.AppsV1().Deployments(t.ns).GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("kube: get scale of deployment %s/%s: %w", t.ns, name, err)
		}
		current := int(sc.Spec.Replicas)
		if current == replicas {
			return nil
		}
		if replicas < current && marked == nil {
			marked, err = t.markVictims(ctx, group, zone, current-replicas, victims)
			if err != nil {
				return err
			}
		}
		sc.Spec.Replicas = int32(replicas)
		if _, err := t.client.AppsV1().Deployments(t.ns).UpdateScale(ctx, name, sc, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("kube: update scale of deployment %s/%s from %d to %d: %w", t.ns, name, current, replicas, err)
		}
		return nil
	})
	if err != nil && len(marked) > 0 {
		t.unmark(context.WithoutCancel(ctx), marked)
	}
	return err
}

// markVictims sets the victim deletion cost on the first n victims that are
// running pods of group × zone and returns their names.
func (t *Target) markVictims(ctx context.Context, group, zone string, n int, victims []string) ([]string, error) {
	marked := []string{}
	patch := []byte(`{"metadata":{"annotations":{"` + AnnotationDeletionCost + `":"` + VictimDeletionCost + `"}}}`)
	for _, v := range victims {
		if len(marked) == n {
			break
		}
		if slices.Contains(marked, v) || len(validation.IsDNS1123Subdomain(v)) > 0 {
			continue
		}
		pod, err := t.client.CoreV1().Pods(t.ns).Get(ctx, v, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			t.log.Info("scale-in victim not found", "group", group, "zone", zone, "pod", v)
			continue
		}
		if err != nil {
			return marked, fmt.Errorf("kube: get victim pod %s/%s: %w", t.ns, v, err)
		}
		if checkLabels(pod.Labels, group, zone) != nil || pod.DeletionTimestamp != nil || pod.Labels[LabelTrack] == TrackCanary {
			t.log.Info("scale-in victim skipped", "group", group, "zone", zone, "pod", v,
				"terminating", pod.DeletionTimestamp != nil, "canary", pod.Labels[LabelTrack] == TrackCanary)
			continue
		}
		if _, err := t.client.CoreV1().Pods(t.ns).Patch(ctx, v, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return marked, fmt.Errorf("kube: set %s on victim pod %s/%s: %w", AnnotationDeletionCost, t.ns, v, err)
		}
		marked = append(marked, v)
	}
	return marked, nil
}

// unmark removes the deletion cost from pods whose scale-in did not happen.
func (t *Target) unmark(ctx context.Context, pods []string) {
	patch := []byte(`{"metadata":{"annotations":{"` + AnnotationDeletionCost + `":null}}}`)
	for _, p := range pods {
		if _, err := t.client.CoreV1().Pods(t.ns).Patch(ctx, p, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.log.Warn("could not remove deletion cost", "pod", p, "err", err.Error())
		}
	}
}

// Endpoints lists the workers of group × zone from the EndpointSlices of its
// Service, ready and not ready (terminating ones are not ready), sorted by ID.
func (t *Target) Endpoints(ctx context.Context, group, zone string) ([]fleet.Endpoint, error) {
	name, err := DeploymentName(group, zone)
	if err != nil {
		return nil, err
	}
	sel := labels.Set{discoveryv1.LabelServiceName: name}.String()
	list, err := t.client.DiscoveryV1().EndpointSlices(t.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("kube: list endpointslices of service %s/%s: %w", t.ns, name, err)
	}
	for i := range list.Items {
		if err := checkLabels(list.Items[i].Labels, group, zone); err != nil {
			return nil, fmt.Errorf("kube: endpointslice %s/%s: %w", t.ns, list.Items[i].Name, err)
		}
	}
	return t.endpoints(ctx, name, list.Items)
}

// Zones lists every group × zone that has a worker EndpointSlice in the
// namespace (grouped by the slices' group and zone labels), sorted. Replicas
// is left 0: the edge routes on endpoints only.
func (t *Target) Zones(ctx context.Context) ([]fleet.Zone, error) {
	sel := LabelComponent + "=" + ComponentWorker + "," + LabelGroup + "," + LabelZone
	list, err := t.client.DiscoveryV1().EndpointSlices(t.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("kube: list worker endpointslices in %s: %w", t.ns, err)
	}
	type key struct{ group, zone string }
	byZone := map[key][]discoveryv1.EndpointSlice{}
	for _, s := range list.Items {
		k := key{s.Labels[LabelGroup], s.Labels[LabelZone]}
		byZone[k] = append(byZone[k], s)
	}
	zones := make([]fleet.Zone, 0, len(byZone))
	for k, ss := range byZone {
		name, err := DeploymentName(k.group, k.zone)
		if err != nil {
			t.log.Warn("worker endpointslice with invalid labels skipped", "slice", ss[0].Name, "err", err.Error())
			continue
		}
		eps, err := t.endpoints(ctx, name, ss)
		if err != nil {
			return nil, err
		}
		zones = append(zones, fleet.Zone{Group: k.group, Zone: k.zone, Endpoints: eps})
	}
	slices.SortFunc(zones, func(a, b fleet.Zone) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Zone, b.Zone))
	})
	return zones, nil
}

// endpoints turns the slices of Service name into fleet endpoints. An
// endpoint without a pod targetRef or whose pod is gone is left out; a pod in
// two slices (dual stack) is listed once, IPv4 first.
func (t *Target) endpoints(ctx context.Context, name string, ss []discoveryv1.EndpointSlice) ([]fleet.Endpoint, error) {
	slices.SortStableFunc(ss, func(a, b discoveryv1.EndpointSlice) int {
		return cmp.Or(cmp.Compare(familyRank(a.AddressType), familyRank(b.AddressType)), strings.Compare(a.Name, b.Name))
	})
	seen := map[string]bool{}
	created := map[types.UID]podInfo{}
	var out []fleet.Endpoint
	for _, s := range ss {
		port, ok := httpPort(s.Ports)
		if !ok && len(s.Endpoints) == 0 {
			continue // a new Service's slice before its first pod: no ports yet
		}
		if !ok {
			return nil, fmt.Errorf("kube: endpointslice %s/%s has no port named %q", t.ns, s.Name, PortName)
		}
		for _, e := range s.Endpoints {
			ref := e.TargetRef
			if ref == nil || ref.Kind != "Pod" || ref.Name == "" || len(e.Addresses) == 0 || seen[ref.Name] {
				continue
			}
			info, err := t.podCreated(ctx, name, ref)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return nil, err
			}
			seen[ref.Name] = true
			created[ref.UID] = info
			out = append(out, fleet.Endpoint{
				ID:      ref.Name,
				Addr:    net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(port))),
				Ready:   e.Conditions.Ready == nil || *e.Conditions.Ready,
				Created: info.at,
				Canary:  info.canary,
			})
		}
	}
	t.mu.Lock()
	t.created[name] = created
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b fleet.Endpoint) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// podCreated returns the creation time of the pod ref points to and whether
// it is a canary, from the cache of Service name when the UID is known there.
func (t *Target) podCreated(ctx context.Context, name string, ref *corev1.ObjectReference) (podInfo, error) {
	t.mu.Lock()
	info, ok := t.created[name][ref.UID]
	t.mu.Unlock()
	if ok && ref.UID != "" {
		return info, nil
	}
	pod, err := t.client.CoreV1().Pods(t.ns).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return podInfo{}, err
		}
		return podInfo{}, fmt.Errorf("kube: get pod %s/%s of service %s: %w", t.ns, ref.Name, name, err)
	}
	if ref.UID != "" && pod.UID != ref.UID {
		// A new pod with the old name: the endpoint is stale.
		return podInfo{}, apierrors.NewNotFound(corev1.Resource("pods"), ref.Name)
	}
	return podInfo{at: pod.CreationTimestamp.Time, canary: pod.Labels[LabelTrack] == TrackCanary}, nil
}

func httpPort(ports []discoveryv1.EndpointPort) (int32, bool) {
	for _, p := range ports {
		if p.Name != nil && *p.Name == PortName && p.Port != nil {
			return *p.Port, true
		}
	}
	return 0, false
}

func familyRank(a discoveryv1.AddressType) int {
	switch a {
	case discoveryv1.AddressTypeIPv4:
		return 0
	case discoveryv1.AddressTypeIPv6:
		return 1
	default:
		return 2
	}
}

var (
	errLabels        = errors.New("group/zone labels do not match")
	errAlreadyExists = errors.New("worker deployment already exists")
)

// checkLabels reports whether an object's labels name group × zone.
func checkLabels(l map[string]string, group, zone string) error {
	if l[LabelGroup] != group || l[LabelZone] != zone {
		return fmt.Errorf("%w: %s=%q %s=%q, want %q %q", errLabels, LabelGroup, l[LabelGroup], LabelZone, l[LabelZone], group, zone)
	}
	return nil
}
