package render_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/autoscaler/deploy/render"
	"github.com/scaleproof/scaleproof/autoscaler/scheduler"
)

// TestRenderQueue: Params.Queue adds the queue workload (the scheduler's
// Deployment and Service, the queriers' Deployment pointed at that Service
// with the post's 6 workers), in the run's namespace with the exact image,
// and leaves every object of the plain render exactly as it was.
func TestRenderQueue(t *testing.T) {
	for _, profile := range render.Profiles {
		t.Run(profile, func(t *testing.T) {
			plain := renderT(t, render.Params{Profile: profile, Namespace: "sp-test", Image: img})
			with := renderT(t, render.Params{Profile: profile, Namespace: "sp-test", Image: img, Queue: true})
			key := func(kind, name string) string { return kind + "/" + name }
			withByKey := map[string]map[string]any{}
			for _, u := range with.all {
				withByKey[key(u.GetKind(), u.GetName())] = u.Object
			}
			for _, u := range plain.all {
				if w, ok := withByKey[key(u.GetKind(), u.GetName())]; !ok || !reflect.DeepEqual(w, u.Object) {
					t.Errorf("%s %s changed or gone with Queue", u.GetKind(), u.GetName())
				}
			}
			var added []string
			for _, u := range with.all {
				found := false
				for _, p := range plain.all {
					found = found || (p.GetKind() == u.GetKind() && p.GetName() == u.GetName())
				}
				if !found {
					added = append(added, key(u.GetKind(), u.GetName()))
					if u.GetNamespace() != "sp-test" {
						t.Errorf("%s %s in namespace %q, want sp-test", u.GetKind(), u.GetName(), u.GetNamespace())
					}
				}
			}
			slices.Sort(added)
			want := []string{"Deployment/" + deploykube.QuerierName, "Deployment/" + deploykube.SchedulerName, "Service/" + deploykube.SchedulerName}
			if !slices.Equal(added, want) {
				t.Fatalf("Queue added %v, want %v", added, want)
			}

			sched, q := with.deploys[deploykube.SchedulerName], with.deploys[deploykube.QuerierName]
			svc := with.services[deploykube.SchedulerName]
			if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(sched.Spec.Template.Labels)) ||
				labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(q.Spec.Template.Labels)) {
				t.Errorf("the scheduler Service selects %v: want the scheduler's pod only", svc.Spec.Selector)
			}
			sc, qc := sched.Spec.Template.Spec.Containers[0], q.Spec.Template.Spec.Containers[0]
			if sc.Image != img || qc.Image != img {
				t.Errorf("images %q, %q, want %q", sc.Image, qc.Image, img)
			}
			if sc.Args[0] != "scheduler" || qc.Args[0] != "querier" {
				t.Errorf("args %q, %q", sc.Args, qc.Args)
			}
			for _, a := range []string{
				fmt.Sprintf("--scheduler=http://%s", deploykube.SchedulerName),
				fmt.Sprintf("--workers=%d", scheduler.PostWorkersPerQuerier),
				"--id=$(POD_NAME)",
			} {
				if !slices.Contains(qc.Args, a) {
					t.Errorf("querier args %q lack %q", qc.Args, a)
				}
			}
			if svc.Spec.Ports[0].Port != 80 || svc.Spec.Ports[0].TargetPort.StrVal != sc.Ports[0].Name {
				t.Errorf("the scheduler Service's port %+v does not reach the container's %+v", svc.Spec.Ports[0], sc.Ports[0])
			}
			if sched.Spec.Template.Annotations["prometheus.io/scrape"] != "true" {
				t.Errorf("the scheduler's pod is not marked for scraping: %v", sched.Spec.Template.Annotations)
			}
			both := renderT(t, render.Params{Profile: profile, Namespace: "sp-test", Image: img, Queue: true, Canary: true})
			if len(both.all) != len(with.all) || !slices.Contains(both.deploys[deploykube.ConsoleName].Spec.Template.Spec.Containers[0].Args, "--canary") {
				t.Errorf("Queue with Canary: %d objects (want %d) or no --canary", len(both.all), len(with.all))
			}
		})
	}
}
