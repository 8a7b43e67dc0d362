// Package render renders the reference system's manifests (autoscaler/deploy/kube's
// kustomize tree) from Go with kustomize's own library (krusty), the same
// engine as `kubectl apply -k`: the profile's overlay, a namespace, and the
// image's exact tag. Nothing is read from disk; the tree is embedded.
//
// kustomize (sigs.k8s.io/kustomize/api v0.21.1) builds from the module proxy
// beside client-go v0.37.2: it needs only kyaml and kube-openapi, which the
// module graph resolves to the versions client-go already uses.
package render

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
)

// Profiles are the overlays that exist, by the harness's profile names.
var Profiles = []string{"quick", "published"}

// Params choose what Render produces.
type Params struct {
	// Profile is "quick" or "published" (the overlay).
	Profile string
	// Namespace for every object; "" keeps the base's "scaleproof".
	Namespace string
	// Image is the exact reference of the scaleproof-ref image
	// (scaleproof.local/scaleproof-ref:TAG); never :latest.
	Image string
	// Canary adds components/canary: the console gets --canary and runs a
	// canary Deployment of one replica beside each zone's workers.
	Canary bool
	// Cloud adds components/cloud, the cloud specifics of Ramen 0.7.5's
	// autoscaling notes (GKE, EKS, AKS): safe-to-evict "false" on the
	// workers and the console, probes with a 5 s timeout and 6 allowed
	// liveness misses, maxUnavailable 0, minReadySeconds 90 and a 40 s
	// console drain whatever the profile, and imagePullPolicy IfNotPresent
	// (the image is pulled from the cloud's registry, not loaded).
	Cloud bool
	// Queue adds components/queue: the queue workload's scheduler
	// (Deployment and Service scaleproof-scheduler) and queriers
	// (Deployment scaleproof-querier, 6 workers each).
	Queue bool
}

var imageRE = regexp.MustCompile(`^([a-z0-9][a-z0-9.-]*(:[0-9]+)?/)?[a-z0-9._/-]+:([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})$`)

func (p Params) check() error {
	known := false
	for _, n := range Profiles {
		known = known || n == p.Profile
	}
	if !known {
		return fmt.Errorf("render: profile %q: want one of %s", p.Profile, strings.Join(Profiles, ", "))
	}
	if p.Namespace != "" {
		if errs := validation.IsDNS1123Label(p.Namespace); len(errs) > 0 {
			return fmt.Errorf("render: namespace %q: %s", p.Namespace, strings.Join(errs, "; "))
		}
	}
	m := imageRE.FindStringSubmatch(p.Image)
	if m == nil || m[3] == "latest" {
		return fmt.Errorf("render: image %q: want an exact REPOSITORY:TAG, never :latest", p.Image)
	}
	return nil
}

// Render returns the objects of the profile's overlay, in kustomize's
// order (Namespace first, then RBAC, then the rest).
func Render(p Params) ([]*unstructured.Unstructured, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	i := strings.LastIndex(p.Image, ":")
	top := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - overlays/" + p.Profile + "\n" +
		"images:\n  - name: " + deploykube.ImageName + "\n    newName: " + p.Image[:i] + "\n    newTag: \"" + p.Image[i+1:] + "\"\n"
	if p.Namespace != "" {
		top += "namespace: " + p.Namespace + "\n"
	}
	var comps []string
	if p.Canary {
		comps = append(comps, "components/canary")
	}
	if p.Cloud {
		comps = append(comps, "components/cloud")
	}
	if p.Queue {
		comps = append(comps, "components/queue")
	}
	if len(comps) > 0 {
		top += "components:\n  - " + strings.Join(comps, "\n  - ") + "\n"
	}
	return kustomize(p.Profile, top)
}

// YAML renders p as one multi-document YAML stream (for `kubectl apply -f -`
// and for reading what would be applied).
func YAML(p Params) ([]byte, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	objs, err := Render(p)
	if err != nil {
		return nil, err
	}
	return ObjectsYAML(objs)
}
