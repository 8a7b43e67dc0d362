package render

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// KEDANamespace is where components/keda puts the operator and the metrics
// API server (KEDA's own config/ keeps them there; the APIService and the
// RBAC subjects name it).
const KEDANamespace = "keda"

// The image names in KEDA's own manifests, which KEDA replaces with the
// exact tags of the images built here.
const (
	KEDAOperatorImageName = "ghcr.io/kedacore/keda"
	KEDAMetricsImageName  = "ghcr.io/kedacore/keda-metrics-apiserver"
	KEDAWebhooksImageName = "ghcr.io/kedacore/keda-admission-webhooks"
	PrometheusImageName   = "prometheus"
)

// KEDAParams choose what KEDA renders.
type KEDAParams struct {
	// Operator and MetricsAPIServer are the exact references of the
	// images (scaleproof.local/keda:TAG, scaleproof.local/keda-metrics-apiserver:TAG);
	// never :latest.
	Operator, MetricsAPIServer string
	// Webhooks, when not "", adds KEDA's admission webhooks
	// (components/keda/webhooks) with this image.
	Webhooks string
}

// KEDA returns the objects of components/keda (KEDA v2.21.0's own
// config/: CRDs, namespace keda, RBAC, the operator, the metrics API server
// and its APIService), images at the given tags, imagePullPolicy Never. An
// image that is not an exact REPOSITORY:TAG is an error.
func KEDA(p KEDAParams) ([]*unstructured.Unstructured, error) {
	imgs := map[string]string{KEDAOperatorImageName: p.Operator, KEDAMetricsImageName: p.MetricsAPIServer}
	comps := []string{"components/keda"}
	if p.Webhooks != "" {
		imgs[KEDAWebhooksImageName] = p.Webhooks
		comps = append(comps, "components/keda/webhooks")
	}
	return renderComponents("keda", "", comps, imgs)
}

// PrometheusParams choose what Prometheus renders.
type PrometheusParams struct {
	// Namespace is the run's namespace: Prometheus scrapes the pods of its
	// own namespace. Required.
	Namespace string
	// Image is the exact reference of the Prometheus image
	// (scaleproof.local/prometheus:TAG); never :latest.
	Image string
}

// Prometheus returns the objects of components/prometheus in the
// namespace: a ServiceAccount, the headless Service prometheus-scrape
// (pods labelled prometheus.io/scrape: "true", port named metrics), the
// ConfigMap prometheus-config, the Deployment and the Service prometheus
// (port 9090). An empty or invalid namespace or a non-exact image is an error.
func Prometheus(p PrometheusParams) ([]*unstructured.Unstructured, error) {
	if errs := validation.IsDNS1123Label(p.Namespace); len(errs) > 0 {
		return nil, fmt.Errorf("render: prometheus: namespace %q: %s", p.Namespace, strings.Join(errs, "; "))
	}
	return renderComponents("prometheus", p.Namespace, []string{"components/prometheus"}, map[string]string{PrometheusImageName: p.Image})
}

// ObjectsYAML writes objects as one multi-document YAML stream.
func ObjectsYAML(objs []*unstructured.Unstructured) ([]byte, error) {
	var b strings.Builder
	for i, o := range objs {
		if i > 0 {
			b.WriteString("---\n")
		}
		j, err := o.MarshalJSON()
		if err != nil {
			return nil, err
		}
		y, err := yaml.JSONToYAML(j)
		if err != nil {
			return nil, err
		}
		b.Write(y)
	}
	return []byte(b.String()), nil
}

// renderComponents builds a kustomization of components only, with images
// (name in the manifests -> exact reference) and an optional namespace.
func renderComponents(what, namespace string, comps []string, images map[string]string) ([]*unstructured.Unstructured, error) {
	names := slices.Sorted(maps.Keys(images))
	top := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\ncomponents:\n"
	for _, c := range comps {
		top += "  - " + c + "\n"
	}
	top += "images:\n"
	for _, n := range names {
		ref := images[n]
		m := imageRE.FindStringSubmatch(ref)
		if m == nil || m[3] == "latest" {
			return nil, fmt.Errorf("render: %s: image %q for %s: want an exact REPOSITORY:TAG, never :latest", what, ref, n)
		}
		top += imageEntry(n, ref)
	}
	if namespace != "" {
		top += "namespace: " + namespace + "\n"
	}
	return kustomize(what, top)
}
