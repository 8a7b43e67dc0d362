package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/scaleproof/scaleproof/scenarios/target"
)

// ScaledObjects is KEDA's ScaledObject resource.
var ScaledObjects = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}

// KEDA's defaults (KEDA docs, ScaledObject specification).
const (
	DefaultPollingInterval = 30 * time.Second  // spec.pollingInterval
	DefaultCooldownPeriod  = 300 * time.Second // spec.cooldownPeriod
	DefaultMaxReplicaCount = 100               // spec.maxReplicaCount (minReplicaCount: 0)
	// DefaultReconcile is the harness's allowance for KEDA's operator to
	// carry a changed ScaledObject into its HPA: KEDA reconciles on the
	// watch event and documents no bound.
	DefaultReconcile = 5 * time.Second
)

const kedaDoc = "KEDA docs, ScaledObject specification"

// KEDAConfig names a Deployment scaled by a KEDA ScaledObject (and the HPA
// KEDA makes from it), with the clients of the run and of the two roles.
type KEDAConfig struct {
	// Run, RunDyn read; Admin, AdminDyn, Viewer, ViewerDyn change in the
	// roles' names (the typed clients the Deployment's scale, the dynamic
	// ones the ScaledObject).
	Run, Admin, Viewer          kubernetes.Interface
	RunDyn, AdminDyn, ViewerDyn dynamic.Interface
	// Namespace, Deployment (the scale target) and ScaledObject.
	Namespace, Deployment, ScaledObject string
	// HPA is the HPA KEDA made; "" reads the ScaledObject's status.hpaName,
	// else advanced.horizontalPodAutoscalerConfig.name, else
	// keda-hpa-<ScaledObject>.
	HPA string
	// SyncPeriod and DownscaleStabilization are kube-controller-manager's
	// HPA flags, as in HPAConfig (0: 15 s and 300 s).
	SyncPeriod, DownscaleStabilization time.Duration
	// Reconcile is the allowance for KEDA to carry a ScaledObject change
	// into its HPA (0: DefaultReconcile).
	Reconcile time.Duration
	// Now stamps readings (nil: time.Now).
	Now func() time.Time
}

// scaledObject is the part of a ScaledObject the target reads.
type scaledObject struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		ScaleTargetRef struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"scaleTargetRef"`
		PollingInterval *int32 `json:"pollingInterval"`
		CooldownPeriod  *int32 `json:"cooldownPeriod"`
		MinReplicaCount *int32 `json:"minReplicaCount"`
		MaxReplicaCount *int32 `json:"maxReplicaCount"`
		Fallback        *struct {
			FailureThreshold int32  `json:"failureThreshold"`
			Replicas         int32  `json:"replicas"`
			Behavior         string `json:"behavior"`
		} `json:"fallback"`
		Advanced *struct {
			HorizontalPodAutoscalerConfig *struct {
				Name     string                                         `json:"name"`
				Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior"`
			} `json:"horizontalPodAutoscalerConfig"`
		} `json:"advanced"`
		Triggers []struct {
			Type             string            `json:"type"`
			UseCachedMetrics bool              `json:"useCachedMetrics"`
			Metadata         map[string]string `json:"metadata"`
		} `json:"triggers"`
	} `json:"spec"`
	Status struct {
		HPAName string `json:"hpaName"`
	} `json:"status"`
}

func (s scaledObject) bounds() (min, max int) {
	min, max = 0, DefaultMaxReplicaCount
	if s.Spec.MinReplicaCount != nil {
		min = int(*s.Spec.MinReplicaCount)
	}
	if s.Spec.MaxReplicaCount != nil {
		max = int(*s.Spec.MaxReplicaCount)
	}
	return min, max
}

func seconds(p *int32, def time.Duration) time.Duration {
	if p == nil {
		return def
	}
	return time.Duration(*p) * time.Second
}

func (s scaledObject) hpaName(name string) string {
	switch {
	case s.Status.HPAName != "":
		return s.Status.HPAName
	case s.Spec.Advanced != nil && s.Spec.Advanced.HorizontalPodAutoscalerConfig != nil && s.Spec.Advanced.HorizontalPodAutoscalerConfig.Name != "":
		return s.Spec.Advanced.HorizontalPodAutoscalerConfig.Name
	}
	return "keda-hpa-" + name
}

func (s scaledObject) behavior() *autoscalingv2.HorizontalPodAutoscalerBehavior {
	if s.Spec.Advanced == nil || s.Spec.Advanced.HorizontalPodAutoscalerConfig == nil {
		return nil
	}
	return s.Spec.Advanced.HorizontalPodAutoscalerConfig.Behavior
}

// paused is KEDA's pause annotation (autoscaling.keda.sh/paused "true", or
// autoscaling.keda.sh/paused-replicas set).
func (s scaledObject) paused() bool {
	a := s.Metadata.Annotations
	_, replicas := a["autoscaling.keda.sh/paused-replicas"]
	return a["autoscaling.keda.sh/paused"] == "true" || replicas
}

func readScaledObject(ctx context.Context, c dynamic.Interface, ns, name string) (scaledObject, error) {
	var s scaledObject
	u, err := c.Resource(ScaledObjects).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return s, fmt.Errorf("read scaledobject %s/%s: %w", ns, name, err)
	}
	b, err := json.Marshal(u.Object)
	if err != nil {
		return s, fmt.Errorf("read scaledobject %s/%s: %w", ns, name, err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("read scaledobject %s/%s: %w", ns, name, err)
	}
	return s, nil
}

// kedaTarget is Target over a ScaledObject and the HPA KEDA made.
type kedaTarget struct {
	kube
	runDyn, adminDyn, viewerDyn dynamic.Interface
	so, hpa                     string
	contracts                   target.Contracts
}

var _ target.Target = (*kedaTarget)(nil)

// NewKEDA reads the ScaledObject once with cfg.RunDyn, checks that it
// scales Deployment cfg.Deployment, and returns its Target, whose Contracts
// follow that ScaledObject's spec (min/maxReplicaCount, pollingInterval,
// cooldownPeriod, fallback, advanced.horizontalPodAutoscalerConfig.behavior)
// as read then. It is an error when a client or name is missing, the
// ScaledObject cannot be read, or it scales something else.
func NewKEDA(ctx context.Context, cfg KEDAConfig) (target.Target, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s, err := readScaledObject(ctx, cfg.RunDyn, cfg.Namespace, cfg.ScaledObject)
	if err != nil {
		return nil, fmt.Errorf("target keda: %w", err)
	}
	if ref := s.Spec.ScaleTargetRef; (ref.Kind != "" && ref.Kind != "Deployment") || ref.Name != cfg.Deployment {
		kind := ref.Kind
		if kind == "" {
			kind = "Deployment"
		}
		return nil, fmt.Errorf("target keda: scaledobject %s/%s scales %s %q, not Deployment %q", cfg.Namespace, cfg.ScaledObject, kind, ref.Name, cfg.Deployment)
	}
	hpa := cfg.HPA
	if hpa == "" {
		hpa = s.hpaName(cfg.ScaledObject)
	}
	return &kedaTarget{
		kube:   newKube(cfg.Run, cfg.Admin, cfg.Viewer, cfg.Namespace, cfg.Deployment, cfg.Now),
		runDyn: cfg.RunDyn, adminDyn: cfg.AdminDyn, viewerDyn: cfg.ViewerDyn,
		so: cfg.ScaledObject, hpa: hpa, contracts: kedaContracts(s, cfg),
	}, nil
}

func (cfg KEDAConfig) check() error {
	var errs []error
	if cfg.Run == nil || cfg.Admin == nil || cfg.Viewer == nil || cfg.RunDyn == nil || cfg.AdminDyn == nil || cfg.ViewerDyn == nil {
		errs = append(errs, errors.New("the run's, the admin's and the viewer's clients (typed and dynamic) are all needed"))
	}
	for _, f := range []struct{ name, v string }{{"namespace", cfg.Namespace}, {"deployment", cfg.Deployment}, {"scaledobject", cfg.ScaledObject}} {
		if f.v == "" {
			errs = append(errs, fmt.Errorf("no %s", f.name))
		}
	}
	if cfg.SyncPeriod < 0 || cfg.DownscaleStabilization < 0 || cfg.Reconcile < 0 {
		errs = append(errs, errors.New("negative sync period, downscale stabilization or reconcile allowance"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("target keda: %w", err)
	}
	return nil
}

func (t *kedaTarget) Kind() target.Kind           { return target.KEDA }
func (t *kedaTarget) Name() string                { return "scaledobject " + t.ns + "/" + t.so }
func (t *kedaTarget) Contracts() target.Contracts { return t.contracts }

func (t *kedaTarget) dyn(role target.Role) (dynamic.Interface, error) {
	return target.ByRole(role, t.adminDyn, t.viewerDyn)
}

// State reads the Deployment (spec.replicas, status.readyReplicas), the
// ScaledObject (minReplicaCount, default 0; maxReplicaCount, default 100)
// and KEDA's HPA (status.desiredReplicas, status.currentMetrics) with the
// run's clients. Before KEDA has made its HPA (404), Desired is the count
// and there is no metric.
func (t *kedaTarget) State(ctx context.Context) (target.State, error) {
	at := t.now()
	count, ready, err := t.deploymentState(ctx)
	if err != nil {
		return target.State{}, err
	}
	s, err := readScaledObject(ctx, t.runDyn, t.ns, t.so)
	if err != nil {
		return target.State{}, err
	}
	st := target.State{At: at, Count: count, Ready: ready, Desired: count}
	st.Min, st.Max = s.bounds()
	h, err := t.run.AutoscalingV2().HorizontalPodAutoscalers(t.ns).Get(ctx, t.hpa, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return target.State{}, fmt.Errorf("read hpa %s/%s: %w", t.ns, t.hpa, err)
	default:
		r := readHPA(h)
		st.Desired, st.Metric, st.HasMetric, st.MetricTarget = r.desired, r.metric, r.hasMetric, r.metricTarget
	}
	return st, nil
}

// SetBounds merge-patches the ScaledObject's spec.minReplicaCount and
// maxReplicaCount in role's name (KEDA then carries them into its HPA).
func (t *kedaTarget) SetBounds(ctx context.Context, role target.Role, min, max int) (target.Outcome, error) {
	c, err := t.dyn(role)
	if err != nil {
		return target.Outcome{}, err
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"minReplicaCount": min, "maxReplicaCount": max}})
	if err != nil {
		return target.Outcome{}, err
	}
	_, err = c.Resource(ScaledObjects).Namespace(t.ns).Patch(ctx, t.so, types.MergePatchType, patch, metav1.PatchOptions{})
	return outcome(err, fmt.Sprintf("patch scaledobject %s/%s bounds to %d..%d", t.ns, t.so, min, max))
}

// Trail reads, with the run's client, the SuccessfulRescale Events of
// KEDA's HPA (RescaleEvent: 1 <-> N) and KEDA's own activation Events on
// the ScaledObject (KEDAEvent: 0 <-> N), at or after since, oldest first.
func (t *kedaTarget) Trail(ctx context.Context, since time.Time) ([]target.Change, error) {
	cs, err := hpaTrail(ctx, t.run, t.ns, t.hpa)
	if err != nil {
		return nil, err
	}
	evs, err := listEvents(ctx, t.run, t.ns, "ScaledObject", t.so)
	if err != nil {
		return nil, err
	}
	for _, e := range evs {
		if more, ok := KEDAEvent(e); ok {
			cs = append(cs, more...)
		}
	}
	return target.SinceSorted(cs, since), nil
}

// fromTo reads KEDA's activation messages: "Scaled apps/v1.Deployment
// ns/name from 0 to 1, triggered by s0-prometheus" and "Deactivated
// apps/v1.Deployment ns/name from 1 to 0".
var fromTo = regexp.MustCompile(`from (\d+) to (\d+)`)

// KEDAEvent reads one ScaledObject Event as trail entries: reasons
// KEDAScaleTargetActivated (KEDA scaled the target up from 0, or from
// idleReplicaCount) and KEDAScaleTargetDeactivated (down to 0 after the
// cooldownPeriod), with From and To from the message and the message as
// Reason. Other reasons (KEDAScalerFailed, KEDAScaleTargetActivationFailed
// ...) change no count; they and messages that do not parse give ok false.
// An Event that stands for repeats gives entries at its first and last
// time, as RescaleEvent.
func KEDAEvent(e corev1.Event) (cs []target.Change, ok bool) {
	if e.Reason != "KEDAScaleTargetActivated" && e.Reason != "KEDAScaleTargetDeactivated" {
		return nil, false
	}
	m := fromTo.FindStringSubmatch(e.Message)
	if m == nil {
		return nil, false
	}
	from, err1 := strconv.Atoi(m[1])
	to, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil {
		return nil, false
	}
	return spanChanges(e, from, to, e.Message), true
}

// kedaContracts are the HPA's contracts with the ScaledObject's settings,
// and KEDA's own loop where it acts: activation from 0 and deactivation to
// 0 (pollingInterval, cooldownPeriod), the bounds it copies into its HPA,
// and the fallback.
func kedaContracts(s scaledObject, cfg KEDAConfig) target.Contracts {
	min, max := s.bounds()
	sync := cfg.SyncPeriod
	if sync == 0 {
		sync = DefaultSyncPeriod
	}
	down := cfg.DownscaleStabilization
	if down == 0 {
		down = DefaultDownscaleStabilization
	}
	rec := cfg.Reconcile
	if rec == 0 {
		rec = DefaultReconcile
	}
	poll := seconds(s.Spec.PollingInterval, DefaultPollingInterval)
	cool := seconds(s.Spec.CooldownPeriod, DefaultCooldownPeriod)
	p := hpaParams{sync: sync, min: max1(min), max: max, b: behaviorOf(s.behavior(), down),
		where: "the ScaledObject's advanced.horizontalPodAutoscalerConfig"}
	c := hpaContracts(p)
	pollSrc := kedaDoc + ", pollingInterval"

	switch up := c[target.FactScalesUp]; {
	case max <= min:
		c[target.FactScalesUp] = target.Contract{NotApplicable: fmt.Sprintf("maxReplicaCount %d is not above minReplicaCount %d: the count cannot rise", max, min)}
	case up.Applies || min == 0:
		// From 0, KEDA's own activation rises above min even when the HPA
		// cannot (maxReplicaCount 1, or scale-up Disabled).
		var pre string
		bound := sync + p.b.up.window
		if min == 0 {
			bound += poll
			pre = fmt.Sprintf("from 0, KEDA activates the target at its next poll (pollingInterval %s) once a trigger is active (above its activation threshold); then ", target.Secs(poll))
		}
		for _, tr := range s.Spec.Triggers {
			if tr.UseCachedMetrics {
				bound += poll
				pre += fmt.Sprintf("a trigger uses cached metrics, up to one pollingInterval (%s) old; ", target.Secs(poll))
				break
			}
		}
		text := up.Text
		if !up.Applies {
			text = "the HPA " + up.NotApplicable
		}
		src := hpaDoc + `, "Algorithm details", "Stabilization window", "Default Behavior"`
		if pre != "" {
			src = pollSrc + "; " + src
		}
		c[target.FactScalesUp] = target.Contract{Applies: true, Bound: bound, Text: pre + text, Source: src}
	}
	c[target.FactWithinBounds] = target.Contract{Applies: true, Bound: rec + sync,
		Text: fmt.Sprintf("the count stays within minReplicaCount (%d) and maxReplicaCount (%d): KEDA copies them into its HPA (minReplicas %d)%s; a count outside them is brought within at the next HPA sync (%s) after KEDA's reconcile (allowed %s)",
			min, max, max1(min), map[bool]string{true: " and scales 0 <-> 1 itself"}[min == 0], target.Secs(sync), target.Secs(rec)),
		Source: kedaDoc + ", minReplicaCount, maxReplicaCount; " + hpaDoc}
	c[target.FactLoweredMax] = target.Contract{Applies: true, Bound: rec + sync,
		Text: fmt.Sprintf("a maxReplicaCount lowered below the count applies within the ScaledObject's reconcile (KEDA copies it into its HPA's maxReplicas; allowed %s) plus one HPA sync period (%s), where the HPA sets the count to maxReplicas at once",
			target.Secs(rec), target.Secs(sync)),
		Source: kedaDoc + ", maxReplicaCount; " + c[target.FactLoweredMax].Source}
	c[target.FactViewerRefused] = target.Contract{Applies: true,
		Text:   "the viewer's Role grants only get, list and watch: the API server answers its patch of the ScaledObject and its update of deployments/scale with 403 Forbidden, and nothing changes",
		Source: rbacDoc}
	c[target.FactAdminAllowed] = target.Contract{Applies: true,
		Text:   "the admin's Role grants patch on scaledobjects.keda.sh: the API server accepts its minReplicaCount and maxReplicaCount (KEDA's admission webhook, when installed, may refuse bounds that disagree)",
		Source: rbacDoc + "; " + kedaDoc}
	cs := c[target.FactCountSet]
	if t, ok := strings.CutPrefix(cs.Text, "the HPA owns the count: "); ok {
		cs.Text = "KEDA's HPA owns every count from 1 up: " + t
	} else {
		cs.Text = "KEDA's HPA owns every count from 1 up: " + cs.Text
	}
	if min == 0 {
		cs.Bound = maxDur(cs.Bound, poll)
		cs.Text += fmt.Sprintf("; KEDA's own loop (every pollingInterval, %s) owns 0 <-> 1: it activates a count of 0 while a trigger is active, and deactivates to 0 after the cooldownPeriod", target.Secs(poll))
	}
	cs.Source = kedaDoc + "; " + cs.Source
	c[target.FactCountSet] = cs
	tr := c[target.FactTrail]
	tr.Text = "every rescale of KEDA's HPA is a SuccessfulRescale Event on that HPA (\"New size: N; reason: ...\"), and every activation from 0 and deactivation to 0 a KEDAScaleTargetActivated or KEDAScaleTargetDeactivated Event on the ScaledObject (\"from A to B\"); repeats fold into one Event (its count, first and last time); a count set by hand is no Event; Events expire after the API server's --event-ttl (1 h)"
	if min == 0 {
		tr.Bound = maxDur(sync, poll)
	}
	c[target.FactTrail] = tr
	c[target.FactTrailActor] = target.Contract{NotApplicable: "KEDA's and the HPA's Events name their controllers (keda-operator, horizontal-pod-autoscaler), never who patched the ScaledObject or the scale: that is only in the API server's audit log, when one is enabled"}
	if min == 0 {
		if k := c[target.FactNoEarlyScaleDown]; !p.b.down.disabled() {
			k.Bound = minDur(p.b.down.window, cool)
			k.Text += fmt.Sprintf("; and no scale to 0 before the cooldownPeriod (%s) after the last poll with an active trigger", target.Secs(cool))
			k.Source += "; " + kedaDoc + ", cooldownPeriod"
			c[target.FactNoEarlyScaleDown] = k
		}
		c[target.FactBackToMin] = target.Contract{Applies: true, Bound: cool + poll,
			Text: fmt.Sprintf("after the load KEDA scales the target to 0 (minReplicaCount) from any count once no trigger has been active (at or under its activation threshold) for the cooldownPeriod (%s), at its next poll (pollingInterval %s)",
				target.Secs(cool), target.Secs(poll)),
			Source: kedaDoc + ", cooldownPeriod, pollingInterval"}
	}
	if lb, q := s.lookback(); lb > 0 {
		if k := c[target.FactBackToMin]; k.Applies {
			k.Bound += lb
			k.Text += fmt.Sprintf("; the trigger's query looks back %s (%s): its signal holds the load's peak that long after the load ends, and the bound adds it", target.Secs(lb), q)
			c[target.FactBackToMin] = k
		}
	}
	c[target.FactOutageHolds] = kedaOutage(s, max)
	if s.paused() {
		why := "the ScaledObject is paused (annotation autoscaling.keda.sh/paused or paused-replicas): KEDA does not scale it"
		for _, f := range []target.Fact{target.FactScalesUp, target.FactCountSet, target.FactNoEarlyScaleDown, target.FactBackToMin, target.FactOutageHolds} {
			c[f] = target.Contract{NotApplicable: why}
		}
	}
	return c
}

// kedaOutage is FactOutageHolds for a ScaledObject: only a fallback keeps
// the count while a scaler fails, and only one that never goes below the
// count (behavior currentReplicas or currentReplicasIfHigher, or static
// with fallback.replicas at or above maxReplicaCount).
func kedaOutage(s scaledObject, max int) target.Contract {
	fb := s.Spec.Fallback
	if fb == nil {
		return target.Contract{NotApplicable: "the ScaledObject has no fallback: while a scaler fails KEDA passes no metric to the HPA, and nothing promises the count holds (a trigger that still reads low while the workers are down scales in)"}
	}
	b := fb.Behavior
	if b == "" {
		b = "static"
	}
	src := kedaDoc + ", fallback, fallback.behavior"
	text := fmt.Sprintf("after %d failures in a row of a scaler (fallback.failureThreshold), KEDA feeds the HPA a metric that holds ", fb.FailureThreshold)
	switch {
	case b == "currentReplicas":
		return target.Contract{Applies: true, Text: text + "the current count (fallback.behavior currentReplicas): the count does not fall while the scaler fails; an outage the scaler still reads is not a failure", Source: src}
	case b == "currentReplicasIfHigher":
		return target.Contract{Applies: true, Text: text + fmt.Sprintf("the higher of the current count and fallback.replicas (%d) (fallback.behavior currentReplicasIfHigher): the count does not fall while the scaler fails; an outage the scaler still reads is not a failure", fb.Replicas), Source: src}
	case b == "static" && int(fb.Replicas) >= max:
		return target.Contract{Applies: true, Text: text + fmt.Sprintf("fallback.replicas (%d), at or above maxReplicaCount (%d): the count does not fall while the scaler fails; an outage the scaler still reads is not a failure", fb.Replicas, max), Source: src}
	}
	return target.Contract{NotApplicable: fmt.Sprintf("the fallback (behavior %s, replicas %d) takes a count above fallback.replicas down to it while a scaler fails: it holds a count, not the count", b, fb.Replicas)}
}

func max1(n int) int { return max(n, 1) }

func maxDur(a, b time.Duration) time.Duration { return max(a, b) }
func minDur(a, b time.Duration) time.Duration { return min(a, b) }

// rangeSelector is a PromQL range selector ([2m], [30s], [1h]).
var rangeSelector = regexp.MustCompile(`\[([0-9]+[smhdwy])(:[0-9]*[smhdwy]?)?\]`)

// lookback is the longest range selector in the ScaledObject's prometheus
// triggers' queries (the post's max_over_time(...[2m]) holds a peak for 2
// minutes after it passed) and that query; 0 when none has one.
func (s scaledObject) lookback() (time.Duration, string) {
	var best time.Duration
	var query string
	for _, tr := range s.Spec.Triggers {
		if tr.Type != "prometheus" {
			continue
		}
		q := tr.Metadata["query"]
		for _, m := range rangeSelector.FindAllStringSubmatch(q, -1) {
			d, err := model.ParseDuration(m[1])
			if err == nil && time.Duration(d) > best {
				best, query = time.Duration(d), q
			}
		}
	}
	return best, query
}
