package kubeconfig

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

func consolePod(name string, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
		Labels: map[string]string{"app.kubernetes.io/name": "scaleproof", "app.kubernetes.io/component": "console"}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}}
}

// TestRestartConsole: Restart deletes the console's pods and returns once
// none of them is left, a new one is ready and /readyz answers; a
// replacement that never gets ready is an error naming what it waited for.
func TestRestartConsole(t *testing.T) {
	for _, c := range []struct {
		name         string
		replaceReady bool
		want         string // "" for success, else in the error
		// rollout bounds the restart: 10 s where it must succeed (its
		// /readyz answer must come within it, which a loaded machine can
		// delay past 1 s), 1 s where its expiry is what the row checks.
		rollout time.Duration
	}{
		{"the replacement gets ready", true, "", 10 * time.Second},
		{"the replacement never gets ready", false, "new pods ready: none", time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			readyz := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/readyz" {
					http.NotFound(w, r)
				}
			}))
			defer readyz.Close()
			sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "scaleproof", "app.kubernetes.io/component": "console"}}
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: deploykube.ConsoleName, Namespace: "ns"}, Spec: appsv1.DeploymentSpec{Selector: sel}}
			other := consolePod("edge-1", true)
			other.Labels = map[string]string{"app.kubernetes.io/name": "scaleproof", "app.kubernetes.io/component": "edge"}
			kc := fake.NewClientset(d, consolePod("console-old", true), other)
			var deleted []string
			// The ReplicaSet's part: a deleted pod is replaced at once.
			kc.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				name := a.(k8stesting.DeleteAction).GetName()
				deleted = append(deleted, name)
				if err := kc.Tracker().Delete(a.GetResource(), "ns", name); err != nil {
					return true, nil, err
				}
				return true, nil, kc.Tracker().Add(consolePod(name+"-new", c.replaceReady))
			})
			p := &Platform{cfg: Config{Name: "kind", Namespace: "ns", NodeHost: "127.0.0.1", RolloutTimeout: c.rollout},
				log: slog.New(slog.NewTextHandler(io.Discard, nil)), kc: kc}
			p.endpoints.ConsoleURL = readyz.URL
			err := p.Restart(context.Background(), platform.PartConsole)
			if !slices.Equal(deleted, []string{"console-old"}) {
				t.Errorf("deleted %v, want the console's pod only", deleted)
			}
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("Restart = %v, want %q", err, c.want)
			}
		})
	}
}

// TestOffers: the workers' listing (not in a target run) and the
// console's restart, only where its Service leads to the new pod (the
// node's ports); everything else is a *NotOfferedError with the reason.
func TestOffers(t *testing.T) {
	restart := platform.RestartAction(platform.PartConsole)
	for _, c := range []struct {
		name   string
		cfg    Config
		action string
		want   string // "" offered
	}{
		{"kind: the console's restart", Config{NodeHost: "127.0.0.1"}, restart, ""},
		{"a port-forward ends with its pod", Config{}, restart, "port-forward"},
		{"a target run has no console", Config{NodeHost: "127.0.0.1", Target: &platform.TargetSpec{}}, restart, "no console"},
		{"a worker's freeze", Config{NodeHost: "127.0.0.1"}, "freeze a worker", "node's processes"},
		{"the workers' listing", Config{}, "list a zone's workers", ""},
		{"a target run's workers", Config{Target: &platform.TargetSpec{}}, "list a zone's workers", "no reference workers"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Name = "kind"
			p := &Platform{cfg: c.cfg}
			err := p.Offers(c.action)
			if c.want == "" && err != nil || c.want != "" && (!errors.Is(err, platform.ErrNotOffered) || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("Offers(%q) = %v, want %q", c.action, err, c.want)
			}
			if c.want != "" && c.action == restart {
				if err := p.Restart(context.Background(), platform.PartConsole); !errors.Is(err, platform.ErrNotOffered) {
					t.Fatalf("Restart = %v, want not offered", err)
				}
			}
		})
	}
}
