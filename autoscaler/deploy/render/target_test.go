package render_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/autoscaler/deploy/render"
	"github.com/scaleproof/scaleproof/autoscaler/scheduler"
)

const targetNS = "sp-target"

func renderTarget(t *testing.T, profile, kind, workload string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := render.Target(render.TargetParams{Profile: profile, Namespace: targetNS, Image: img, Kind: kind, Workload: workload})
	if err != nil {
		t.Fatalf("Target(%s, %s, %s): %v", profile, kind, workload, err)
	}
	return objs
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func typed[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	var v T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &v); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return &v
}

// TestTargetObjects: every combination renders the namespace, the two
// roles, the workload with its NodePort load Service and its scrape labels,
// and exactly one autoscaler of the kind asked for, all in the run's
// namespace; no object is labelled as the console's workers (whose HPAs the
// console deletes).
func TestTargetObjects(t *testing.T) {
	for _, profile := range render.Profiles {
		for _, kind := range []string{render.KindHPA, render.KindKEDA} {
			for _, workload := range []string{render.WorkloadWorker, render.WorkloadQueue} {
				t.Run(profile+"/"+kind+"/"+workload, func(t *testing.T) {
					objs := renderTarget(t, profile, kind, workload)
					want := []string{
						"Namespace/" + targetNS,
						"ServiceAccount/" + deploykube.TargetAdminName, "ServiceAccount/" + deploykube.TargetViewerName,
						"Role/" + deploykube.TargetAdminName, "Role/" + deploykube.TargetViewerName,
						"RoleBinding/" + deploykube.TargetAdminName, "RoleBinding/" + deploykube.TargetViewerName,
					}
					if workload == render.WorkloadWorker {
						want = append(want, "Deployment/scaleproof-target", "Service/scaleproof-target")
					} else {
						want = append(want, "Deployment/"+deploykube.SchedulerName, "Service/"+deploykube.SchedulerName, "Deployment/"+deploykube.QuerierName)
					}
					if kind == render.KindHPA {
						want = append(want, "HorizontalPodAutoscaler/scaleproof-target")
					} else {
						want = append(want, "ScaledObject/scaleproof-target")
					}
					var got []string
					for _, o := range objs {
						got = append(got, o.GetKind()+"/"+o.GetName())
						if o.GetKind() != "Namespace" && o.GetNamespace() != targetNS {
							t.Errorf("%s %s in namespace %q, want %s", o.GetKind(), o.GetName(), o.GetNamespace(), targetNS)
						}
						if o.GetLabels()["app.kubernetes.io/component"] == "worker" {
							t.Errorf("%s %s labelled component=worker: the console would delete its HPA", o.GetKind(), o.GetName())
						}
					}
					slices.Sort(got)
					slices.Sort(want)
					if !slices.Equal(got, want) {
						t.Fatalf("objects\n %v\nwant\n %v", got, want)
					}

					svc := typed[corev1.Service](t, find(objs, "Service", render.TargetLoadService(workload)))
					if svc.Spec.Type != corev1.ServiceTypeNodePort || len(svc.Spec.Ports) != 1 ||
						svc.Spec.Ports[0].NodePort != deploykube.TargetNodePort || svc.Spec.Ports[0].Name != "http" ||
						svc.Spec.Ports[0].TargetPort.IntValue() != 8080 {
						t.Errorf("load Service %s: %s %+v, want NodePort %d, port http -> 8080", svc.Name, svc.Spec.Type, svc.Spec.Ports, deploykube.TargetNodePort)
					}
					for _, o := range objs {
						if o.GetKind() != "Deployment" {
							continue
						}
						d := typed[appsv1.Deployment](t, o)
						pl := d.Spec.Template.Labels
						if pl["app.kubernetes.io/component"] == "worker" || pl["group"] != "" || pl["zone"] != "" {
							t.Errorf("Deployment %s's pods labelled %v: never the console's worker labels", d.Name, pl)
						}
						// The run's Prometheus scrapes pods by this label, at the port named metrics.
						c := d.Spec.Template.Spec.Containers[0]
						if pl["prometheus.io/scrape"] != "true" || len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || c.Ports[0].ContainerPort != 8080 {
							t.Errorf("Deployment %s: scrape label %q, ports %+v; want \"true\" and one port metrics:8080", d.Name, pl["prometheus.io/scrape"], c.Ports)
						}
						if c.Image != img {
							t.Errorf("Deployment %s image %q, want %q", d.Name, c.Image, img)
						}
						for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
							if p == nil || p.HTTPGet == nil || p.HTTPGet.Port.IntValue() != 8080 {
								t.Errorf("Deployment %s: a probe not on port 8080: %+v", d.Name, p)
							}
						}
					}
					if sel := labels.SelectorFromSet(svc.Spec.Selector); !sel.Matches(labels.Set(typed[appsv1.Deployment](t,
						find(objs, "Deployment", render.TargetLoadService(workload))).Spec.Template.Labels)) {
						t.Errorf("load Service selects %v: not the pods of %s", svc.Spec.Selector, render.TargetLoadService(workload))
					}
				})
			}
		}
	}
}

// TestTargetCPU: the scale target's pods burn CPU per call against a
// request such that the HPA's 100 % is the intended calls per pod: 2
// in-flight calls of a worker (50m each of 100m), 4 busy workers of a
// querier (the post's threshold; 12m each of 50m, 48m).
func TestTargetCPU(t *testing.T) {
	for _, tc := range []struct {
		workload   string
		arg        string
		request    string
		limit      string
		perPodCall int
	}{
		{render.WorkloadWorker, "--cpu-per-call=50", "100m", "500m", 2},
		{render.WorkloadQueue, "--cpu-per-call=12", "50m", "200m", 4},
	} {
		for _, profile := range render.Profiles {
			d := typed[appsv1.Deployment](t, find(renderTarget(t, profile, render.KindHPA, tc.workload), "Deployment", render.TargetDeployment(tc.workload)))
			c := d.Spec.Template.Spec.Containers[0]
			if !slices.Contains(c.Args, tc.arg) {
				t.Errorf("%s %s: args %v, want %s", profile, tc.workload, c.Args, tc.arg)
			}
			req, lim := c.Resources.Requests[corev1.ResourceCPU], c.Resources.Limits[corev1.ResourceCPU]
			if req.String() != tc.request || lim.String() != tc.limit {
				t.Errorf("%s %s: cpu request %s limit %s, want %s and %s", profile, tc.workload, req.String(), lim.String(), tc.request, tc.limit)
			}
			var milli int64
			for _, a := range c.Args {
				if v, ok := strings.CutPrefix(a, "--cpu-per-call="); ok {
					for _, r := range v {
						milli = milli*10 + int64(r-'0')
					}
				}
			}
			// utilisation at the intended calls per pod, in percent of the request
			if u := milli * int64(tc.perPodCall) * 100 / req.MilliValue(); u < 90 || u > 100 {
				t.Errorf("%s %s: %d calls at %dm = %d %% of %s, want 90..100 %%", profile, tc.workload, tc.perPodCall, milli, u, tc.request)
			}
		}
	}
}

// TestTargetHPA: the HPA's numbers per profile and workload.
func TestTargetHPA(t *testing.T) {
	for _, tc := range []struct {
		profile, workload string
		target            string
		min, max, window  int32
	}{
		{"quick", render.WorkloadWorker, "scaleproof-target", 1, 6, 60},
		{"published", render.WorkloadWorker, "scaleproof-target", 1, 10, 300},
		{"quick", render.WorkloadQueue, deploykube.QuerierName, 1, 8, 60},
		{"published", render.WorkloadQueue, deploykube.QuerierName, 10, 50, 1800},
	} {
		t.Run(tc.profile+"/"+tc.workload, func(t *testing.T) {
			h := typed[autoscalingv2.HorizontalPodAutoscaler](t, find(renderTarget(t, tc.profile, render.KindHPA, tc.workload), "HorizontalPodAutoscaler", deploykube.TargetName))
			s := h.Spec
			if s.ScaleTargetRef.Kind != "Deployment" || s.ScaleTargetRef.Name != tc.target || s.ScaleTargetRef.APIVersion != "apps/v1" {
				t.Errorf("scaleTargetRef %+v, want Deployment %s", s.ScaleTargetRef, tc.target)
			}
			if s.MinReplicas == nil || *s.MinReplicas != tc.min || s.MaxReplicas != tc.max {
				t.Errorf("min %v max %d, want %d %d", s.MinReplicas, s.MaxReplicas, tc.min, tc.max)
			}
			if len(s.Metrics) != 1 || s.Metrics[0].Type != autoscalingv2.ResourceMetricSourceType || s.Metrics[0].Resource.Name != corev1.ResourceCPU ||
				s.Metrics[0].Resource.Target.Type != autoscalingv2.UtilizationMetricType || *s.Metrics[0].Resource.Target.AverageUtilization != 100 {
				t.Errorf("metrics %+v, want CPU averageUtilization 100", s.Metrics)
			}
			b := s.Behavior
			if b == nil || b.ScaleDown == nil || *b.ScaleDown.StabilizationWindowSeconds != tc.window {
				t.Fatalf("behavior %+v, want a scale-down stabilization window of %d s", b, tc.window)
			}
			// scaleUp as the HPA's defaults: no window, max of 100 % and 4 pods per 15 s.
			up := b.ScaleUp
			wantUp := []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}, {Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15}}
			if up == nil || *up.StabilizationWindowSeconds != 0 || *up.SelectPolicy != autoscalingv2.MaxChangePolicySelect || !slices.Equal(up.Policies, wantUp) {
				t.Errorf("scaleUp %+v, want the HPA's defaults", up)
			}
		})
	}
}

// TestTargetScaledObject: the ScaledObject's numbers per profile and
// workload, its trigger's query and the run's Prometheus address.
func TestTargetScaledObject(t *testing.T) {
	// The post's trigger, with this scheduler's metric name and the run's namespace.
	post := `sum(max_over_time(cortex_query_scheduler_inflight_requests{namespace=~"REDACTED", quantile="0.75"}[2m]))`
	postOurs := strings.NewReplacer("cortex_", "loki_", `namespace=~"REDACTED", `, `namespace="`+targetNS+`",`).Replace(post)
	for _, tc := range []struct {
		profile, workload         string
		target                    string
		min, max, polling, window int64
		cooldown                  int64
		query, threshold          string
	}{
		{"quick", render.WorkloadWorker, "scaleproof-target", 1, 6, 5, 60, 60, `sum(scaleproof_worker_inflight{namespace="sp-target"})`, "2"},
		{"published", render.WorkloadWorker, "scaleproof-target", 1, 10, 30, 300, 300, `sum(scaleproof_worker_inflight{namespace="sp-target"})`, "2"},
		{"quick", render.WorkloadQueue, deploykube.QuerierName, 1, 8, 5, 60, 60, postOurs, "4"},
		{"published", render.WorkloadQueue, deploykube.QuerierName, 10, 50, 30, 1800, 300, postOurs, "4"},
	} {
		t.Run(tc.profile+"/"+tc.workload, func(t *testing.T) {
			so := find(renderTarget(t, tc.profile, render.KindKEDA, tc.workload), "ScaledObject", deploykube.TargetName)
			if so.GetAPIVersion() != "keda.sh/v1alpha1" {
				t.Errorf("apiVersion %s", so.GetAPIVersion())
			}
			num := func(f ...string) int64 {
				v, _, _ := unstructured.NestedInt64(so.Object, append([]string{"spec"}, f...)...)
				return v
			}
			str := func(f ...string) string {
				v, _, _ := unstructured.NestedString(so.Object, append([]string{"spec"}, f...)...)
				return v
			}
			if got := str("scaleTargetRef", "name"); got != tc.target {
				t.Errorf("scale target %q, want %s", got, tc.target)
			}
			if num("minReplicaCount") != tc.min || num("maxReplicaCount") != tc.max || num("pollingInterval") != tc.polling || num("cooldownPeriod") != tc.cooldown {
				t.Errorf("min %d max %d polling %d cooldown %d; want %d %d %d %d", num("minReplicaCount"), num("maxReplicaCount"),
					num("pollingInterval"), num("cooldownPeriod"), tc.min, tc.max, tc.polling, tc.cooldown)
			}
			if w := num("advanced", "horizontalPodAutoscalerConfig", "behavior", "scaleDown", "stabilizationWindowSeconds"); w != tc.window {
				t.Errorf("scale-down stabilization window %d s, want %d", w, tc.window)
			}
			trig, _, _ := unstructured.NestedSlice(so.Object, "spec", "triggers")
			if len(trig) != 1 {
				t.Fatalf("%d triggers, want 1", len(trig))
			}
			tr := trig[0].(map[string]any)
			md := tr["metadata"].(map[string]any)
			if tr["type"] != "prometheus" || md["query"] != tc.query || md["threshold"] != tc.threshold ||
				md["serverAddress"] != "http://prometheus.sp-target.svc:9090" {
				t.Errorf("trigger %v, want prometheus, query %s, threshold %s at the run's Prometheus", tr, tc.query, tc.threshold)
			}
			if md["query"] != render.TargetQuery(targetNS, tc.workload) {
				t.Errorf("query %v, TargetQuery says %s", md["query"], render.TargetQuery(targetNS, tc.workload))
			}
		})
	}
	if render.TargetQuery("ns", render.WorkloadQueue) != scheduler.PostQuery("ns") {
		t.Errorf("the queue workload's query is not scheduler.PostQuery")
	}
	// The published numbers of the queue workload are the post's.
	so := find(renderTarget(t, "published", render.KindKEDA, render.WorkloadQueue), "ScaledObject", deploykube.TargetName)
	for f, want := range map[string]int64{"minReplicaCount": scheduler.PostMinReplicas, "maxReplicaCount": scheduler.PostMaxReplicas,
		"pollingInterval": int64(scheduler.PostPollingInterval.Seconds())} {
		if v, _, _ := unstructured.NestedInt64(so.Object, "spec", f); v != want {
			t.Errorf("%s %d, the post's %d", f, v, want)
		}
	}
}

// TestTargetRBAC: the admin may change the HPA, the ScaledObject and the
// Deployment's scale and read events; the viewer only reads; each is bound
// to its own ServiceAccount in the run's namespace. TargetRBAC alone (an
// adopted target) is exactly these objects.
func TestTargetRBAC(t *testing.T) {
	objs, err := render.TargetRBAC(targetNS)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 6 {
		t.Fatalf("%d objects, want 2 ServiceAccounts, 2 Roles, 2 RoleBindings", len(objs))
	}
	write := []string{"patch", "update"}
	read := []string{"get", "list", "watch"}
	for _, tc := range []struct {
		name  string
		verbs []string // on the scale objects
	}{
		{deploykube.TargetAdminName, append(slices.Clone(read), write...)},
		{deploykube.TargetViewerName, read},
	} {
		if find(objs, "ServiceAccount", tc.name) == nil {
			t.Errorf("no ServiceAccount %s", tc.name)
		}
		role := typed[rbacv1.Role](t, find(objs, "Role", tc.name))
		allowed := map[string][]string{}
		for _, r := range role.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					allowed[g+"/"+res] = r.Verbs
				}
			}
			if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") || slices.Contains(r.Verbs, "delete") || slices.Contains(r.Verbs, "create") {
				t.Errorf("%s: rule %+v: no wildcards, create or delete", tc.name, r)
			}
		}
		for _, res := range []string{"autoscaling/horizontalpodautoscalers", "keda.sh/scaledobjects", "apps/deployments", "apps/deployments/scale"} {
			if !slices.Equal(allowed[res], tc.verbs) {
				t.Errorf("%s on %s: %v, want %v", tc.name, res, allowed[res], tc.verbs)
			}
		}
		if !slices.Equal(allowed["/events"], read) {
			t.Errorf("%s on events: %v, want %v", tc.name, allowed["/events"], read)
		}
		rb := typed[rbacv1.RoleBinding](t, find(objs, "RoleBinding", tc.name))
		if rb.RoleRef.Name != tc.name || len(rb.Subjects) != 1 || rb.Subjects[0].Kind != "ServiceAccount" ||
			rb.Subjects[0].Name != tc.name || rb.Subjects[0].Namespace != targetNS {
			t.Errorf("RoleBinding %s: %+v %+v", tc.name, rb.RoleRef, rb.Subjects)
		}
	}
	for _, o := range objs {
		if o.GetNamespace() != targetNS || o.GetLabels()["app.kubernetes.io/name"] != "scaleproof" {
			t.Errorf("%s %s: namespace %q labels %v", o.GetKind(), o.GetName(), o.GetNamespace(), o.GetLabels())
		}
	}
}

// TestTargetPrometheus: the run's Prometheus with its Service as NodePort 30083.
func TestTargetPrometheus(t *testing.T) {
	objs, err := render.TargetPrometheus(render.PrometheusParams{Namespace: targetNS, Image: "scaleproof.local/prometheus:v2.42.0-abc"})
	if err != nil {
		t.Fatal(err)
	}
	svc := typed[corev1.Service](t, find(objs, "Service", deploykube.PrometheusName))
	if svc.Spec.Type != corev1.ServiceTypeNodePort || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].NodePort != deploykube.PrometheusNodePort ||
		svc.Spec.Ports[0].Port != deploykube.PrometheusPort {
		t.Errorf("prometheus Service %s %+v, want NodePort %d on port %d", svc.Spec.Type, svc.Spec.Ports, deploykube.PrometheusNodePort, deploykube.PrometheusPort)
	}
	if find(objs, "Deployment", deploykube.PrometheusName) == nil {
		t.Error("no prometheus Deployment")
	}
}

func TestTargetBadParams(t *testing.T) {
	good := render.TargetParams{Profile: "quick", Namespace: targetNS, Image: img, Kind: render.KindHPA, Workload: render.WorkloadWorker}
	for _, tc := range []struct {
		name string
		edit func(*render.TargetParams)
		want string
	}{
		{"kind", func(p *render.TargetParams) { p.Kind = "vpa" }, `target kind "vpa"`},
		{"workload", func(p *render.TargetParams) { p.Workload = "batch" }, `target workload "batch"`},
		{"no namespace", func(p *render.TargetParams) { p.Namespace = "" }, "no namespace"},
		{"bad namespace", func(p *render.TargetParams) { p.Namespace = "Not_OK" }, "namespace"},
		{"latest", func(p *render.TargetParams) { p.Image = "scaleproof.local/scaleproof-ref:latest" }, "never :latest"},
		{"profile", func(p *render.TargetParams) { p.Profile = "slow" }, "profile"},
	} {
		p := good
		tc.edit(&p)
		if _, err := render.Target(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Target = %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	if _, err := render.TargetRBAC(""); err == nil {
		t.Error("TargetRBAC(\"\") = nil error")
	}
}
