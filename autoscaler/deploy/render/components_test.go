package render

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	testOperator = "scaleproof.local/keda:2.21.0-0123456789ab"
	testMetrics  = "scaleproof.local/keda-metrics-apiserver:2.21.0-0123456789ab"
	testWebhooks = "scaleproof.local/keda-admission-webhooks:2.21.0-0123456789ab"
	testProm     = "scaleproof.local/prometheus:2.42.0-0123456789ab"
)

// containers returns every container of every Deployment, by Deployment name.
func containers(t *testing.T, objs []*unstructured.Unstructured) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		// kustomize's maps hold plain ints, which unstructured's Nested*
		// helpers cannot deep-copy: walk them by hand.
		spec, _ := o.Object["spec"].(map[string]any)
		tmpl, _ := spec["template"].(map[string]any)
		pod, _ := tmpl["spec"].(map[string]any)
		cs, _ := pod["containers"].([]any)
		for _, c := range cs {
			out[o.GetName()] = append(out[o.GetName()], c.(map[string]any))
		}
	}
	return out
}

func TestKEDA(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      KEDAParams
		images map[string]string // Deployment -> image
	}{
		{"operator and metrics API server", KEDAParams{Operator: testOperator, MetricsAPIServer: testMetrics},
			map[string]string{"keda-operator": testOperator, "keda-metrics-apiserver": testMetrics}},
		{"with the admission webhooks", KEDAParams{Operator: testOperator, MetricsAPIServer: testMetrics, Webhooks: testWebhooks},
			map[string]string{"keda-operator": testOperator, "keda-metrics-apiserver": testMetrics, "keda-admission": testWebhooks}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := KEDA(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			cs := containers(t, objs)
			if len(cs) != len(tc.images) {
				t.Errorf("Deployments %v, want %v", keys(cs), tc.images)
			}
			for dep, img := range tc.images {
				if len(cs[dep]) != 1 {
					t.Fatalf("Deployment %s: %d containers, want 1", dep, len(cs[dep]))
				}
				c := cs[dep][0]
				if c["image"] != img {
					t.Errorf("%s: image %v, want %s", dep, c["image"], img)
				}
				if c["imagePullPolicy"] != "Never" {
					t.Errorf("%s: imagePullPolicy %v, want Never", dep, c["imagePullPolicy"])
				}
			}
			kinds := map[string]bool{}
			crds := map[string]bool{}
			for _, o := range objs {
				kinds[o.GetKind()] = true
				if o.GetKind() == "CustomResourceDefinition" {
					crds[o.GetName()] = true
				}
				if ns := o.GetNamespace(); ns != "" && ns != KEDANamespace && !(o.GetKind() == "RoleBinding" && ns == "kube-system") {
					t.Errorf("%s %s in namespace %s, want %s", o.GetKind(), o.GetName(), ns, KEDANamespace)
				}
			}
			for _, n := range []string{"scaledobjects.keda.sh", "scaledjobs.keda.sh", "triggerauthentications.keda.sh",
				"clustertriggerauthentications.keda.sh", "cloudeventsources.eventing.keda.sh", "clustercloudeventsources.eventing.keda.sh"} {
				if !crds[n] {
					t.Errorf("CRD %s missing", n)
				}
			}
			for _, k := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service", "APIService"} {
				if !kinds[k] {
					t.Errorf("no %s", k)
				}
			}
			if kinds["ValidatingWebhookConfiguration"] != (tc.p.Webhooks != "") {
				t.Errorf("ValidatingWebhookConfiguration present = %v, want %v", kinds["ValidatingWebhookConfiguration"], tc.p.Webhooks != "")
			}
			var rest []*unstructured.Unstructured // the CRDs' descriptions name :latest and Always
			for _, o := range objs {
				if o.GetKind() != "CustomResourceDefinition" {
					rest = append(rest, o)
				}
			}
			y, err := ObjectsYAML(rest)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(y), "ghcr.io/") || strings.Contains(string(y), ":latest") || strings.Contains(string(y), "imagePullPolicy: Always") {
				t.Error("rendered KEDA still names an upstream image, :latest or pull Always")
			}
		})
	}
}

func TestKEDABadImages(t *testing.T) {
	for _, p := range []KEDAParams{
		{Operator: "", MetricsAPIServer: testMetrics},
		{Operator: testOperator, MetricsAPIServer: "scaleproof.local/keda-metrics-apiserver:latest"},
		{Operator: "scaleproof.local/keda", MetricsAPIServer: testMetrics},
		{Operator: testOperator, MetricsAPIServer: testMetrics, Webhooks: "x y"},
	} {
		if _, err := KEDA(p); err == nil {
			t.Errorf("KEDA(%+v): no error", p)
		}
	}
}

func TestPrometheus(t *testing.T) {
	objs, err := Prometheus(PrometheusParams{Namespace: "run-1", Image: testProm})
	if err != nil {
		t.Fatal(err)
	}
	cs := containers(t, objs)
	c := cs["prometheus"]
	if len(c) != 1 || c[0]["image"] != testProm || c[0]["imagePullPolicy"] != "Never" {
		t.Fatalf("prometheus container %v, want image %s pulled Never", c, testProm)
	}
	names := map[string]bool{}
	for _, o := range objs {
		if o.GetNamespace() != "run-1" {
			t.Errorf("%s %s in namespace %q, want run-1", o.GetKind(), o.GetName(), o.GetNamespace())
		}
		names[o.GetKind()+"/"+o.GetName()] = true
		if o.GetKind() == "Service" && o.GetName() == "prometheus-scrape" {
			spec, _ := o.Object["spec"].(map[string]any)
			sel, _ := spec["selector"].(map[string]any)
			if sel["prometheus.io/scrape"] != "true" {
				t.Errorf("prometheus-scrape selects %v, want prometheus.io/scrape=true", sel)
			}
		}
		if o.GetKind() == "ConfigMap" {
			data, _ := o.Object["data"].(map[string]any)
			cfg, _ := data["prometheus.yml"].(string)
			if !strings.Contains(cfg, "_metrics._tcp.prometheus-scrape") {
				t.Errorf("prometheus.yml does not discover through prometheus-scrape:\n%s", cfg)
			}
		}
	}
	for _, n := range []string{"ServiceAccount/prometheus", "Service/prometheus", "Service/prometheus-scrape", "ConfigMap/prometheus-config", "Deployment/prometheus"} {
		if !names[n] {
			t.Errorf("%s missing (have %v)", n, names)
		}
	}
	for _, p := range []PrometheusParams{{Namespace: "", Image: testProm}, {Namespace: "Bad_NS", Image: testProm}, {Namespace: "run-1", Image: "prometheus:latest"}} {
		if _, err := Prometheus(p); err == nil {
			t.Errorf("Prometheus(%+v): no error", p)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
