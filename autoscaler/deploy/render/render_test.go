package render_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/autoscaler/deploy/render"
)

const img = "scaleproof.local/scaleproof-ref:sha-0123456789ab"

type objs struct {
	all      []*unstructured.Unstructured
	deploys  map[string]appsv1.Deployment
	services map[string]corev1.Service
	pdbs     map[string]policyv1.PodDisruptionBudget
	bindings map[string]rbacv1.RoleBinding
	template corev1.PodTemplate
}

func renderT(t *testing.T, p render.Params) objs {
	t.Helper()
	all, err := render.Render(p)
	if err != nil {
		t.Fatal(err)
	}
	o := objs{all: all, deploys: map[string]appsv1.Deployment{}, services: map[string]corev1.Service{},
		pdbs: map[string]policyv1.PodDisruptionBudget{}, bindings: map[string]rbacv1.RoleBinding{}}
	conv := func(u *unstructured.Unstructured, into any) {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	for _, u := range all {
		switch u.GetKind() {
		case "Deployment":
			var d appsv1.Deployment
			conv(u, &d)
			o.deploys[d.Name] = d
		case "Service":
			var s corev1.Service
			conv(u, &s)
			o.services[s.Name] = s
		case "PodDisruptionBudget":
			var s policyv1.PodDisruptionBudget
			conv(u, &s)
			o.pdbs[s.Name] = s
		case "RoleBinding":
			var s rbacv1.RoleBinding
			conv(u, &s)
			o.bindings[s.Name] = s
		case "PodTemplate":
			conv(u, &o.template)
		}
	}
	return o
}

func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func TestRenderProfiles(t *testing.T) {
	for _, tc := range []struct {
		profile                 string
		minReady                int32
		grace                   int64
		upCool, downCool, drain string
		bootDelay               string
	}{
		{"published", 90, 50, "30", "120", "--drain=40s", "--boot-delay=5s"},
		{"quick", 9, 10, "3", "12", "--drain=4s", "--boot-delay=500ms"},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			o := renderT(t, render.Params{Profile: tc.profile, Namespace: "sp-test", Image: img})
			if o.all[0].GetKind() != "Namespace" || o.all[0].GetName() != "sp-test" {
				t.Errorf("first object = %s %s, want Namespace sp-test", o.all[0].GetKind(), o.all[0].GetName())
			}
			for _, u := range o.all[1:] {
				if u.GetNamespace() != "sp-test" {
					t.Errorf("%s %s in namespace %q", u.GetKind(), u.GetName(), u.GetNamespace())
				}
			}
			for _, rb := range o.bindings {
				for _, s := range rb.Subjects {
					if s.Namespace != "sp-test" {
						t.Errorf("RoleBinding %s subject %s in namespace %q", rb.Name, s.Name, s.Namespace)
					}
				}
			}
			con, ok := o.deploys[deploykube.ConsoleName]
			if !ok {
				t.Fatalf("no console Deployment; have %v", o.deploys)
			}
			if con.Spec.MinReadySeconds != tc.minReady || con.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
				t.Errorf("console minReadySeconds %d maxUnavailable %v", con.Spec.MinReadySeconds, con.Spec.Strategy.RollingUpdate.MaxUnavailable)
			}
			ps := con.Spec.Template.Spec
			if *ps.TerminationGracePeriodSeconds != tc.grace {
				t.Errorf("console grace %d, want %d", *ps.TerminationGracePeriodSeconds, tc.grace)
			}
			c := ps.Containers[0]
			if env(c, "RAMEN_AUTOSCALE_UP_COOLDOWN_SECS") != tc.upCool || env(c, "RAMEN_AUTOSCALE_COOLDOWN_SECS") != tc.downCool ||
				!slices.Contains(c.Args, tc.drain) || !slices.Contains(c.Args, "--scale-target=kube") {
				t.Errorf("console args %q env %v", c.Args, c.Env)
			}
			if env(c, "RAMEN_AUTOSCALE_TARGET_RPS") != "50" || !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "POD_NAME" && e.ValueFrom != nil }) {
				t.Errorf("console env %v (the overlay must merge, not replace)", c.Env)
			}
			wt := o.template.Template
			if !slices.Contains(wt.Spec.Containers[0].Args, tc.bootDelay) || env(wt.Spec.Containers[0], "RAMEN_MAX_INFLIGHT") != "32" {
				t.Errorf("worker args %q env %v", wt.Spec.Containers[0].Args, wt.Spec.Containers[0].Env)
			}
			pods := map[string]corev1.PodTemplateSpec{"console": con.Spec.Template, "edge": o.deploys[deploykube.EdgeName].Spec.Template, "worker": wt}
			for n, p := range pods {
				ctr := p.Spec.Containers[0]
				if ctr.Image != img || ctr.ImagePullPolicy != corev1.PullNever {
					t.Errorf("%s image %q pull %q, want %q Never", n, ctr.Image, ctr.ImagePullPolicy, img)
				}
				if ctr.ReadinessProbe.TimeoutSeconds != 5 || ctr.LivenessProbe.TimeoutSeconds != 5 || ctr.LivenessProbe.FailureThreshold != 6 {
					t.Errorf("%s probes: readiness %+v liveness %+v", n, ctr.ReadinessProbe, ctr.LivenessProbe)
				}
				if ctr.Lifecycle == nil || ctr.Lifecycle.PreStop == nil || ctr.Lifecycle.PreStop.Sleep == nil {
					t.Errorf("%s: no preStop sleep", n)
				}
				if *p.Spec.SecurityContext.RunAsUser != 65532 {
					t.Errorf("%s runs as %d", n, *p.Spec.SecurityContext.RunAsUser)
				}
			}
			for _, n := range []string{"console", "worker"} {
				if pods[n].Annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"] != "false" {
					t.Errorf("%s pods lack safe-to-evict=false: %v", n, pods[n].Annotations)
				}
			}
			if s := o.services[deploykube.EdgeName]; s.Spec.Type != corev1.ServiceTypeNodePort || s.Spec.Ports[0].NodePort != deploykube.EdgeNodePort {
				t.Errorf("edge Service %+v", s.Spec)
			}
			if s := o.services[deploykube.ConsoleName]; s.Spec.Type != corev1.ServiceTypeNodePort || s.Spec.Ports[0].NodePort != deploykube.ConsoleNodePort {
				t.Errorf("console Service %+v", s.Spec)
			}
			if len(o.pdbs) != 2 {
				t.Errorf("PDBs = %v", o.pdbs)
			}
		})
	}
}

func TestRenderBadInput(t *testing.T) {
	for _, p := range []render.Params{
		{Profile: "fast", Image: img},
		{Profile: "quick", Image: "scaleproof.local/scaleproof-ref:latest"},
		{Profile: "quick", Image: "scaleproof.local/scaleproof-ref"},
		{Profile: "quick", Image: img, Namespace: "Bad_NS"},
	} {
		if _, err := render.Render(p); err == nil {
			t.Errorf("Render(%+v) accepted", p)
		}
	}
}

func TestYAML(t *testing.T) {
	y, err := render.YAML(render.Params{Profile: "quick", Image: img})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(y), "image: "+img) || !strings.Contains(string(y), "namespace: scaleproof\n") {
		t.Errorf("YAML lacks the image or namespace:\n%s", y)
	}
}
