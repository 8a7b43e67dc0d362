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
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/scaleproof/scaleproof/autoscaler/api"
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
	// Prometheus, when set, adds the hpa policy's metric source: the
	// run's Prometheus (components/prometheus, its Service a NodePort at
	// deploykube.PrometheusNodePort) scraping the edge
	// (components/edge-metrics), and the console's --prometheus pointing
	// at it.
	Prometheus *PrometheusScrape
}

// PrometheusScrape is the Prometheus Render adds beside the reference
// system (Params.Prometheus).
type PrometheusScrape struct {
	// Image is the exact reference of the Prometheus image
	// (scaleproof.local/prometheus:TAG); never :latest.
	Image string
	// ScrapeInterval and EvalInterval are Prometheus's global
	// scrape_interval and evaluation_interval (whole milliseconds, at
	// least 1 s; 0 keeps the component's 5 s). The scrape timeout is
	// 4 s or the scrape interval, whichever is shorter, as Prometheus
	// requires a timeout no longer than the interval.
	ScrapeInterval, EvalInterval time.Duration
	// InflightMaxAge is the edge's --inflight-max-age: the window its
	// in-flight summary's quantiles cover, the hpa zones' signal
	// (0 keeps the edge's 1 min). The harness's quick profile scales it
	// as its other hpa times (3 s), so the signal falls after a load as
	// fast as on the local platform.
	InflightMaxAge time.Duration
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
	if pr := p.Prometheus; pr != nil {
		if m := imageRE.FindStringSubmatch(pr.Image); m == nil || m[3] == "latest" {
			return fmt.Errorf("render: prometheus image %q: want an exact REPOSITORY:TAG, never :latest", pr.Image)
		}
		if pr.InflightMaxAge < 0 {
			return fmt.Errorf("render: edge in-flight max age %s: want >= 0", pr.InflightMaxAge)
		}
		for _, d := range []time.Duration{pr.ScrapeInterval, pr.EvalInterval} {
			if d != 0 && (d < time.Second || d%time.Millisecond != 0) {
				return fmt.Errorf("render: prometheus interval %s: want whole milliseconds, at least 1s (or 0 for the default)", d)
			}
		}
	}
	return nil
}

// Render returns the objects of the profile's overlay, in kustomize's
// order (Namespace first, then RBAC, then the rest).
func Render(p Params) ([]*unstructured.Unstructured, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	top := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - overlays/" + p.Profile + "\n" +
		"images:\n" + imageEntry(deploykube.ImageName, p.Image)
	if p.Prometheus != nil {
		top += imageEntry(PrometheusImageName, p.Prometheus.Image)
	}
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
	if p.Prometheus != nil {
		comps = append(comps, "components/prometheus", "components/edge-metrics")
	}
	if len(comps) > 0 {
		top += "components:\n  - " + strings.Join(comps, "\n  - ") + "\n"
	}
	objs, err := kustomize(p.Profile, top)
	if err != nil || p.Prometheus == nil {
		return objs, err
	}
	if objs, err = prometheusNodePort(objs); err != nil {
		return nil, err
	}
	if err := edgeInflightMaxAge(objs, p.Prometheus.InflightMaxAge); err != nil {
		return nil, err
	}
	return objs, scrapeIntervals(objs, *p.Prometheus)
}

// edgeInflightMaxAge adds --inflight-max-age=d to the edge's container
// args (nothing when d is 0).
func edgeInflightMaxAge(objs []*unstructured.Unstructured, d time.Duration) error {
	if d == 0 {
		return nil
	}
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetName() != deploykube.EdgeName {
			continue
		}
		cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if len(cs) != 1 {
			return fmt.Errorf("render: edge has %d containers, want 1", len(cs))
		}
		c, _ := cs[0].(map[string]any)
		args, _, _ := unstructured.NestedStringSlice(c, "args")
		if err := unstructured.SetNestedStringSlice(c, append(args, "--inflight-max-age="+d.String()), "args"); err != nil {
			return err
		}
		return unstructured.SetNestedSlice(o.Object, cs, "spec", "template", "spec", "containers")
	}
	return fmt.Errorf("render: no Deployment %s", deploykube.EdgeName)
}

// scrapeIntervals sets the global scrape_interval, scrape_timeout and
// evaluation_interval of the ConfigMap prometheus-config among objs to
// s's (0 keeps the component's). Each key must stand in prometheus.yml
// exactly once.
func scrapeIntervals(objs []*unstructured.Unstructured, s PrometheusScrape) error {
	if s.ScrapeInterval == 0 && s.EvalInterval == 0 {
		return nil
	}
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" || o.GetName() != "prometheus-config" {
			continue
		}
		y, _, _ := unstructured.NestedString(o.Object, "data", "prometheus.yml")
		set := func(key string, d time.Duration) error {
			if d == 0 {
				return nil
			}
			re := regexp.MustCompile(`(?m)^  ` + key + `: \S+$`)
			if n := len(re.FindAllStringIndex(y, -1)); n != 1 {
				return fmt.Errorf("render: prometheus.yml has %d lines %q, want 1", n, "  "+key+": …")
			}
			y = re.ReplaceAllLiteralString(y, "  "+key+": "+api.PromDuration(d))
			return nil
		}
		timeout := min(4*time.Second, s.ScrapeInterval)
		if err := errors.Join(set("scrape_interval", s.ScrapeInterval), set("scrape_timeout", timeout), set("evaluation_interval", s.EvalInterval)); err != nil {
			return err
		}
		return unstructured.SetNestedField(o.Object, y, "data", "prometheus.yml")
	}
	return errors.New("render: prometheus: no ConfigMap prometheus-config")
}

// imageEntry is one entry of a kustomization's images: the image name in
// the manifests replaced by ref (an exact REPOSITORY:TAG, checked by the
// caller).
func imageEntry(name, ref string) string {
	i := strings.LastIndex(ref, ":")
	return "  - name: " + name + "\n    newName: " + ref[:i] + "\n    newTag: \"" + ref[i+1:] + "\"\n"
}
