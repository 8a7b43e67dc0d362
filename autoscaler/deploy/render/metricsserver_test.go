package render

import (
	"slices"
	"strings"
	"testing"
)

const testMetricsServer = "scaleproof.local/metrics-server:0.8.0-0123456789ab"

// TestMetricsServer: the objects are those of metrics-server v0.8.0's
// components.yaml, in kube-system or cluster-wide, the Deployment running
// our image (never pulled) with upstream's arguments plus a kind node's,
// its selector matching its pods and the Service's, the APIService
// pointing at that Service.
func TestMetricsServer(t *testing.T) {
	objs, err := MetricsServer(testMetricsServer)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"APIService//v1beta1.metrics.k8s.io",
		"ClusterRole//system:aggregated-metrics-reader",
		"ClusterRole//system:metrics-server",
		"ClusterRoleBinding//metrics-server:system:auth-delegator",
		"ClusterRoleBinding//system:metrics-server",
		"Deployment/kube-system/metrics-server",
		"RoleBinding/kube-system/metrics-server-auth-reader",
		"Service/kube-system/metrics-server",
		"ServiceAccount/kube-system/metrics-server",
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
		if o.GetLabels()["k8s-app"] != "metrics-server" {
			t.Errorf("%s %s: labels %v, want k8s-app: metrics-server", o.GetKind(), o.GetName(), o.GetLabels())
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("objects\n%v\nwant\n%v", got, want)
	}

	c := containers(t, objs)["metrics-server"]
	if len(c) != 1 {
		t.Fatalf("metrics-server containers %v, want 1", c)
	}
	if c[0]["image"] != testMetricsServer || c[0]["imagePullPolicy"] != "Never" {
		t.Errorf("image %v pull %v, want %s Never", c[0]["image"], c[0]["imagePullPolicy"], testMetricsServer)
	}
	var args []string
	for _, a := range c[0]["args"].([]any) {
		args = append(args, a.(string))
	}
	wantArgs := []string{"--cert-dir=/tmp", "--secure-port=10250", "--kubelet-preferred-address-types=InternalIP",
		"--kubelet-use-node-status-port", "--metric-resolution=15s", "--kubelet-insecure-tls"}
	if !slices.Equal(args, wantArgs) {
		t.Errorf("args %v, want %v", args, wantArgs)
	}

	for _, o := range objs {
		spec, _ := o.Object["spec"].(map[string]any)
		switch o.GetKind() {
		case "Deployment":
			sel, _ := spec["selector"].(map[string]any)
			ml, _ := sel["matchLabels"].(map[string]any)
			tmpl, _ := spec["template"].(map[string]any)
			meta, _ := tmpl["metadata"].(map[string]any)
			pl, _ := meta["labels"].(map[string]any)
			if ml["k8s-app"] != "metrics-server" || pl["k8s-app"] != "metrics-server" {
				t.Errorf("Deployment selector %v, pod labels %v: want k8s-app: metrics-server in both", ml, pl)
			}
		case "Service":
			sel, _ := spec["selector"].(map[string]any)
			if sel["k8s-app"] != "metrics-server" {
				t.Errorf("Service selector %v, want k8s-app: metrics-server", sel)
			}
		case "APIService":
			svc, _ := spec["service"].(map[string]any)
			if spec["group"] != "metrics.k8s.io" || spec["version"] != "v1beta1" || svc["name"] != "metrics-server" || svc["namespace"] != MetricsServerNamespace {
				t.Errorf("APIService spec %v, want metrics.k8s.io/v1beta1 served by kube-system/metrics-server", spec)
			}
		}
	}
	y, err := ObjectsYAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(y), "gcr.io/") || strings.Contains(string(y), "registry.k8s.io") || strings.Contains(string(y), "IfNotPresent") {
		t.Errorf("rendered metrics-server still names an upstream image or pulls:\n%s", y)
	}
}

func TestMetricsServerBadImage(t *testing.T) {
	for _, img := range []string{"", "scaleproof.local/metrics-server", "scaleproof.local/metrics-server:latest", "x y:1"} {
		if _, err := MetricsServer(img); err == nil {
			t.Errorf("MetricsServer(%q): no error", img)
		}
	}
}
