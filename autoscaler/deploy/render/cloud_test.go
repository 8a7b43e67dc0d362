package render_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/autoscaler/deploy/render"
)

func drains(args []string) []string {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, "--drain") {
			out = append(out, a)
		}
	}
	return out
}

func TestRenderCloud(t *testing.T) {
	for _, profile := range render.Profiles {
		for _, canary := range []bool{false, true} {
			o := renderT(t, render.Params{Profile: profile, Image: img, Cloud: true, Canary: canary})
			con := o.deploys[deploykube.ConsoleName]
			if con.Spec.MinReadySeconds != 90 || con.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
				t.Errorf("%s: console minReadySeconds %d maxUnavailable %v", profile, con.Spec.MinReadySeconds, con.Spec.Strategy.RollingUpdate.MaxUnavailable)
			}
			cc := con.Spec.Template.Spec.Containers[0]
			if got := drains(cc.Args); !slices.Equal(got, []string{"--drain=40s"}) {
				t.Errorf("%s canary %v: console drains %v, want exactly --drain=40s (args %v)", profile, canary, got, cc.Args)
			}
			if canary != slices.Contains(cc.Args, "--canary") {
				t.Errorf("%s canary %v: console args %v", profile, canary, cc.Args)
			}
			if g := *con.Spec.Template.Spec.TerminationGracePeriodSeconds; g < 45 {
				t.Errorf("%s: console grace %d s is shorter than its 40 s drain and preStop", profile, g)
			}
			pods := map[string]corev1.PodTemplateSpec{"console": con.Spec.Template, "worker": o.template.Template}
			for n, pt := range pods {
				if pt.Annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"] != "false" {
					t.Errorf("%s %s: annotations %v", profile, n, pt.Annotations)
				}
			}
			pods["edge"] = o.deploys[deploykube.EdgeName].Spec.Template
			for n, pt := range pods {
				c := pt.Spec.Containers[0]
				if c.ImagePullPolicy != corev1.PullIfNotPresent || c.Image != img {
					t.Errorf("%s %s: image %s pull %s", profile, n, c.Image, c.ImagePullPolicy)
				}
				if c.ReadinessProbe.TimeoutSeconds != 5 || c.LivenessProbe.TimeoutSeconds != 5 || c.LivenessProbe.FailureThreshold != 6 {
					t.Errorf("%s %s: probes %+v %+v", profile, n, c.ReadinessProbe, c.LivenessProbe)
				}
			}
		}
	}
}

// TestRenderCloudLeavesKindAlone: without Cloud, every profile renders as
// before (kind loads the image: Never), and Cloud changes nothing but the
// cloud specifics in the published profile, which already has them.
func TestRenderCloudLeavesKindAlone(t *testing.T) {
	for _, profile := range render.Profiles {
		o := renderT(t, render.Params{Profile: profile, Image: img})
		for n, c := range map[string]corev1.Container{"console": o.deploys[deploykube.ConsoleName].Spec.Template.Spec.Containers[0],
			"edge": o.deploys[deploykube.EdgeName].Spec.Template.Spec.Containers[0], "worker": o.template.Template.Spec.Containers[0]} {
			if c.ImagePullPolicy != corev1.PullNever {
				t.Errorf("%s %s without cloud: pull %s", profile, n, c.ImagePullPolicy)
			}
		}
	}
	quick := renderT(t, render.Params{Profile: "quick", Image: img})
	if got := drains(quick.deploys[deploykube.ConsoleName].Spec.Template.Spec.Containers[0].Args); !slices.Equal(got, []string{"--drain=4s"}) {
		t.Errorf("quick without cloud: drains %v", got)
	}
	pub := renderT(t, render.Params{Profile: "published", Image: img})
	pubCloud := renderT(t, render.Params{Profile: "published", Image: img, Cloud: true})
	a, b := pub.deploys[deploykube.ConsoleName], pubCloud.deploys[deploykube.ConsoleName]
	a.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	if !reflect.DeepEqual(a.Spec, b.Spec) {
		t.Errorf("published: the cloud overlay changed more than the pull policy:\n%+v\n%+v", a.Spec.Template.Spec.Containers[0], b.Spec.Template.Spec.Containers[0])
	}
}
