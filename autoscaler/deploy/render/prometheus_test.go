package render_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/autoscaler/deploy/render"
)

const promImg = "scaleproof.local/prometheus:v2.42.0-abc"

// TestRenderPrometheus: Params.Prometheus adds the hpa policy's metric
// source in the run's namespace: the run's Prometheus (its image, its
// Service a NodePort, the intervals asked for), scraping the edge alone at
// its one port, and the console's --prometheus at it; every other console
// argument is kept, and without it none of this is rendered.
func TestRenderPrometheus(t *testing.T) {
	const ns = "sp-test"
	for _, tc := range []struct {
		profile              string
		scrape, eval         time.Duration
		maxAge               time.Duration
		wantScrape, wantEval string
		wantTimeout          string
	}{
		{"quick", time.Second, time.Second, 3 * time.Second, "1s", "1s", "1s"},
		{"published", 5 * time.Second, 15 * time.Second, time.Minute, "5s", "15s", "4s"},
		{"quick", 1500 * time.Millisecond, 0, 0, "1500ms", "5s", "1500ms"},
		{"published", 0, 0, 0, "5s", "5s", "4s"},
	} {
		t.Run(tc.profile+"/"+tc.wantScrape, func(t *testing.T) {
			plain := renderT(t, render.Params{Profile: tc.profile, Namespace: ns, Image: img})
			with := renderT(t, render.Params{Profile: tc.profile, Namespace: ns, Image: img,
				Prometheus: &render.PrometheusScrape{Image: promImg, ScrapeInterval: tc.scrape, EvalInterval: tc.eval, InflightMaxAge: tc.maxAge}})

			pa := plain.deploys[deploykube.ConsoleName].Spec.Template.Spec.Containers[0].Args
			wa := with.deploys[deploykube.ConsoleName].Spec.Template.Spec.Containers[0].Args
			if !slices.Equal(wa, append(slices.Clone(pa), "--prometheus=http://prometheus:9090")) {
				t.Errorf("console args %q, want %q and --prometheus=http://prometheus:9090", wa, pa)
			}
			if slices.ContainsFunc(pa, func(a string) bool { return strings.HasPrefix(a, "--prometheus") }) {
				t.Errorf("console args without Prometheus: %q", pa)
			}
			if _, ok := plain.deploys[deploykube.PrometheusName]; ok {
				t.Error("a prometheus Deployment without Params.Prometheus")
			}

			edge := with.deploys[deploykube.EdgeName]
			ea, pea := edge.Spec.Template.Spec.Containers[0].Args, plain.deploys[deploykube.EdgeName].Spec.Template.Spec.Containers[0].Args
			wantEdge := slices.Clone(pea)
			if tc.maxAge > 0 {
				wantEdge = append(wantEdge, "--inflight-max-age="+tc.maxAge.String())
			}
			if !slices.Equal(ea, wantEdge) {
				t.Errorf("edge args %q, want %q", ea, wantEdge)
			}
			if edge.Spec.Template.Labels["prometheus.io/scrape"] != "true" {
				t.Errorf("edge pod labels %v, want prometheus.io/scrape: \"true\"", edge.Spec.Template.Labels)
			}
			if _, ok := edge.Spec.Selector.MatchLabels["prometheus.io/scrape"]; ok {
				t.Error("the scrape label is in the edge's selector: a Deployment's selector is immutable")
			}
			if plain.deploys[deploykube.EdgeName].Spec.Template.Labels["prometheus.io/scrape"] != "" {
				t.Error("edge labelled for scraping without Params.Prometheus")
			}
			for name, d := range with.deploys {
				if name != deploykube.EdgeName && d.Spec.Template.Labels["prometheus.io/scrape"] != "" {
					t.Errorf("%s is scraped too: only the edge's in-flight is the hpa zones' metric", name)
				}
			}
			scrape := with.services["prometheus-scrape"]
			if len(scrape.Spec.Ports) != 1 || scrape.Spec.Ports[0].TargetPort != intstr.FromString("http") || scrape.Spec.Ports[0].Name != "metrics" {
				t.Errorf("prometheus-scrape ports %+v, want port metrics to the edge's port http", scrape.Spec.Ports)
			}
			if !slices.ContainsFunc(edge.Spec.Template.Spec.Containers[0].Ports, func(p corev1.ContainerPort) bool { return p.Name == "http" }) {
				t.Error("the edge has no port named http")
			}

			prom, ok := with.deploys[deploykube.PrometheusName]
			if !ok || prom.Spec.Template.Spec.Containers[0].Image != promImg {
				t.Errorf("prometheus Deployment (%v) image, want %s", ok, promImg)
			}
			svc := with.services[deploykube.PrometheusName]
			if svc.Spec.Type != corev1.ServiceTypeNodePort || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].NodePort != deploykube.PrometheusNodePort {
				t.Errorf("prometheus Service %s %+v, want NodePort %d", svc.Spec.Type, svc.Spec.Ports, deploykube.PrometheusNodePort)
			}
			for _, o := range with.all {
				if o.GetKind() != "Namespace" && o.GetNamespace() != ns {
					t.Errorf("%s %s in namespace %q, want %s", o.GetKind(), o.GetName(), o.GetNamespace(), ns)
				}
			}
			cm := find(with.all, "ConfigMap", "prometheus-config")
			if cm == nil {
				t.Fatal("no ConfigMap prometheus-config")
			}
			y := typed[corev1.ConfigMap](t, cm).Data["prometheus.yml"]
			for _, want := range []string{"\n  scrape_interval: " + tc.wantScrape + "\n", "\n  scrape_timeout: " + tc.wantTimeout + "\n",
				"\n  evaluation_interval: " + tc.wantEval + "\n", "dns_sd_configs"} {
				if !strings.Contains(y, want) {
					t.Errorf("prometheus.yml lacks %q:\n%s", want, y)
				}
			}
		})
	}
}

func TestRenderPrometheusBadInput(t *testing.T) {
	for _, pr := range []render.PrometheusScrape{
		{Image: "prometheus:latest"},
		{Image: "prometheus"},
		{Image: promImg, ScrapeInterval: 500 * time.Millisecond},
		{Image: promImg, EvalInterval: time.Second + time.Microsecond},
		{Image: promImg, InflightMaxAge: -time.Second},
	} {
		if _, err := render.Render(render.Params{Profile: "quick", Image: img, Prometheus: &pr}); err == nil {
			t.Errorf("Render with %+v: no error", pr)
		}
	}
}
