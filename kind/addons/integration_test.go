package addons

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/scaleproof/scaleproof/kind"
	"github.com/scaleproof/scaleproof/kind/kedaimage"
	"github.com/scaleproof/scaleproof/kind/nodeimage"
)

// TestInstallForReal makes a kind cluster on podman with our node image,
// loads the metrics-server and KEDA images from the keda-images cache
// ($SCALEPROOF_KEDA_CACHE_DIR, default ~/.cache/scaleproof/kedaimage),
// runs Install for both, and checks what `kubectl top nodes` and the HPA
// controller read: metrics.k8s.io lists a NodeMetrics with usage, and
// external.metrics.k8s.io answers discovery. The cluster is deleted
// always. It builds nothing: it runs only with SCALEPROOF_KIND=1, our node
// image in podman and metrics-server's archive in the cache; KEDA's part
// is skipped, saying so, when KEDA's archives are not there
// (SCALEPROOF_ADDONS_NEED_KEDA=1 makes that a failure).
func TestInstallForReal(t *testing.T) {
	if os.Getenv("SCALEPROOF_KIND") != "1" {
		t.Skip("set SCALEPROOF_KIND=1 to make a real kind cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	nb, err := nodeimage.New(ctx, nodeimage.Options{})
	if err != nil {
		t.Skip(err)
	}
	if !nodeimage.ImageExists(ctx, "podman", nb.Tag()) {
		t.Skipf("node image %s is not in podman (make kind-node-image builds it)", nb.Tag())
	}
	ko := kedaimage.Options{CacheDir: os.Getenv("SCALEPROOF_KEDA_CACHE_DIR"), Only: []string{kedaimage.SetMetricsServer}}
	ms, missing, err := kedaimage.Lookup(ctx, ko)
	if err != nil || len(missing) > 0 {
		t.Skipf("%v %v", err, kedaimage.MissingError(ko.CacheDirOrDefault(), missing))
	}
	ko.Only = []string{kedaimage.SetKEDA}
	kd, kedaMissing, _ := kedaimage.Lookup(ctx, ko)
	withKEDA := len(kedaMissing) == 0
	if !withKEDA && os.Getenv("SCALEPROOF_ADDONS_NEED_KEDA") == "1" {
		t.Fatal(kedaimage.MissingError(ko.CacheDirOrDefault(), kedaMissing))
	}
	archives := append(ms.Archives(), kd.Archives()...)
	if !withKEDA {
		archives = ms.Archives()
	}

	art := t.TempDir()
	if d := os.Getenv("ARTIFACTS"); d != "" {
		art = filepath.Join(d, "addons-integration")
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	k, err := kind.New(kind.Config{
		RunID: "addons-" + time.Now().UTC().Format("150405"), Provider: "podman", NodeImage: nb.Tag(), Artifacts: art,
		Images: func(context.Context) ([]string, error) { return archives, nil }, Log: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			if err := k.DumpLogs(context.Background(), filepath.Join(art, "logs")); err != nil {
				t.Errorf("dump logs: %v", err)
			}
		}
		if err := k.Down(context.Background()); err != nil {
			t.Errorf("down: %v", err)
		}
		for _, s := range k.Steps().Steps() {
			t.Logf("kind step %-16s %6.1f s err=%v", s.Name, s.Duration.Seconds(), s.Err)
		}
	}()
	if _, err := k.Up(ctx); err != nil {
		t.Fatal(err)
	}

	o := Options{MetricsServer: true, KEDA: withKEDA, Log: log, Images: Images{MetricsServer: ms.Ref("metrics-server"),
		KEDAOperator: kd.Ref("keda"), KEDAMetricsAPIServer: kd.Ref("keda-metrics-apiserver"), KEDAWebhooks: kd.Ref("keda-admission-webhooks")}}
	start := time.Now()
	tm, err := Install(ctx, k.Kubeconfig(), o)
	t.Logf("Install (metrics-server, KEDA %v) in %.1f s: apply %.1f s, rollout %.1f s, APIServices %.1f s, metrics ready %.1f s",
		withKEDA, time.Since(start).Seconds(), tm.Apply.Seconds(), tm.Rollout.Seconds(), tm.APIServices.Seconds(), tm.MetricsReady.Seconds())
	if err != nil {
		t.Fatal(err)
	}

	rc, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(rc)
	kc := kubernetes.NewForConfigOrDie(rc)
	t.Run("metrics.k8s.io lists NodeMetrics", func(t *testing.T) {
		l, err := dyn.Resource(nodeMetricsGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != len(nodes.Items) || len(l.Items) == 0 {
			t.Fatalf("%d NodeMetrics for %d nodes", len(l.Items), len(nodes.Items))
		}
		for _, it := range l.Items {
			usage, _ := it.Object["usage"].(map[string]any)
			t.Logf("NodeMetrics %s: cpu %v memory %v", it.GetName(), usage["cpu"], usage["memory"])
			if usage["cpu"] == nil || usage["memory"] == nil {
				t.Errorf("NodeMetrics %s: usage %v, want cpu and memory", it.GetName(), usage)
			}
		}
		// a pod's too (what the HPA's CPU utilisation is computed from):
		// metrics-server's own, once scraped
		pm, err := dyn.Resource(nodeMetricsGVR.GroupVersion().WithResource("pods")).Namespace("kube-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d PodMetrics in kube-system", len(pm.Items))
	})
	t.Run("external.metrics.k8s.io served", func(t *testing.T) {
		if !withKEDA {
			t.Skip(kedaimage.MissingError(ko.CacheDirOrDefault(), kedaMissing))
		}
		rl, err := kc.Discovery().ServerResourcesForGroupVersion(ExternalGroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		if rl.GroupVersion != ExternalGroupVersion {
			t.Errorf("discovery answered %s", rl.GroupVersion)
		}
		ok, st := apiServiceStatus(ctx, dyn, ExternalMetricsAPIService)
		if !ok || !strings.Contains(st, "Available=True") {
			t.Errorf("%s", st)
		}
	})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
