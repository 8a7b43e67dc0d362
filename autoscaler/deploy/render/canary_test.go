package render_test

import (
	"slices"
	"testing"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/autoscaler/deploy/render"
)

// TestRenderCanary: Params.Canary gives the console --canary (it then runs
// a canary Deployment beside each zone's workers), on both profiles, with
// every other console argument kept; without it there is none.
func TestRenderCanary(t *testing.T) {
	for _, profile := range render.Profiles {
		t.Run(profile, func(t *testing.T) {
			plain := renderT(t, render.Params{Profile: profile, Namespace: "sp-test", Image: img})
			with := renderT(t, render.Params{Profile: profile, Namespace: "sp-test", Image: img, Canary: true})
			pa := plain.deploys[deploykube.ConsoleName].Spec.Template.Spec.Containers[0].Args
			wa := with.deploys[deploykube.ConsoleName].Spec.Template.Spec.Containers[0].Args
			if slices.Contains(pa, "--canary") {
				t.Fatalf("console args without Canary: %q", pa)
			}
			if !slices.Equal(wa, append(slices.Clone(pa), "--canary")) {
				t.Fatalf("console args with Canary: %q, want %q and --canary", wa, pa)
			}
			if len(with.all) != len(plain.all) {
				t.Fatalf("%d objects with Canary, %d without: the component only patches the console", len(with.all), len(plain.all))
			}
		})
	}
}
