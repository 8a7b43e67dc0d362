package kind

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/kind/pkg/exec"
)

// TestKindClusterForReal makes a real kind cluster (SCALEPROOF_KIND=1; needs
// root, podman or a Docker that runs privileged containers, and the node
// image, which it builds when missing): Up, an image loaded, node Ready,
// DumpLogs, Down. It logs the time of each step.
func TestKindClusterForReal(t *testing.T) {
	if os.Getenv("SCALEPROOF_KIND") != "1" {
		t.Skip("set SCALEPROOF_KIND=1 to make a real kind cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	art := t.TempDir()
	if d := os.Getenv("ARTIFACTS"); d != "" {
		art = filepath.Join(d, "kind-integration")
	}
	archive := filepath.Join(t.TempDir(), "it.tar")
	writeTinyImage(t, archive, "scaleproof.local/kind-it:1", buildHello(t))
	var out bytes.Buffer
	k, err := New(Config{
		RunID: "it-" + time.Now().UTC().Format("150405"), Provider: os.Getenv("SCALEPROOF_KIND_PROVIDER"),
		NodeImage: os.Getenv("SCALEPROOF_KIND_NODE_IMAGE"), Artifacts: art, NodePorts: []int{30080, 30081},
		Images: func(context.Context) ([]string, error) { return []string{archive}, nil },
		Log:    slog.New(slog.NewTextHandler(&testWriter{t}, nil)), Out: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := k.DumpLogs(context.Background(), filepath.Join(art, "logs")); err != nil {
			t.Errorf("dump logs: %v", err)
		}
		if err := k.Down(context.Background()); err != nil {
			t.Errorf("down: %v", err)
		}
		if up, _ := k.IsUp(context.Background()); up {
			t.Error("cluster still up after Down")
		}
		for _, s := range k.Steps().Steps() {
			t.Logf("step %-16s %6.1f s err=%v", s.Name, s.Duration.Seconds(), s.Err)
		}
		t.Logf("platform output:\n%s", out.String())
	}()
	if _, err := k.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if up, err := k.IsUp(ctx); err != nil || !up {
		t.Fatalf("IsUp %v %v", up, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ready := false
	start := time.Now()
	for i := 0; i < 180 && !ready; i++ { // bounded: 3 minutes
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil && len(nodes.Items) == 1 {
			for _, c := range nodes.Items[0].Status.Conditions {
				ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
			}
		}
		if !ready {
			select {
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			case <-time.After(time.Second):
			}
		}
	}
	if !ready {
		t.Fatal("node not Ready within 3 minutes")
	}
	t.Logf("node Ready %.1f s after Up returned", time.Since(start).Seconds())
	// every kube-system pod Ready (etcd, apiserver, controller-manager,
	// scheduler, kube-proxy, CoreDNS x2), then a pod of our own gets an IP
	// from the static CNI and runs
	waitFor(ctx, t, "kube-system pods Ready", func() bool {
		pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) < 7 {
			return false
		}
		for _, p := range pods.Items {
			if !podReady(&p) {
				return false
			}
		}
		return true
	})
	t.Logf("kube-system pods Ready %.1f s after Up returned", time.Since(start).Seconds())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "it-pause"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "pause", Image: "registry.k8s.io/pause:3.10.2", ImagePullPolicy: corev1.PullNever}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podStart := time.Now()
	waitFor(ctx, t, "a pod Running with an IP", func() bool {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "it-pause", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != ""
	})
	t.Logf("pod Running %.1f s after create", time.Since(podStart).Seconds())

	// the loaded image serves through a NodePort mapped to 127.0.0.1
	labels := map[string]string{"app": "it-hello"}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "it-hello", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "hello", Image: "scaleproof.local/kind-it:1", ImagePullPolicy: corev1.PullNever,
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "it-hello"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: labels,
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: 30080}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/", k.hostPorts[30080])
	hc := &http.Client{Timeout: 2 * time.Second}
	var body string
	waitFor(ctx, t, "hello through the NodePort at "+url, func() bool {
		resp, err := hc.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == 200
	})
	if !strings.Contains(body, "hello from it-hello") {
		t.Fatalf("body %q", body)
	}
	t.Logf("NodePort answered on %s %.1f s after the pod was created", url, time.Since(podStart).Seconds())
	nodes, err := k.provider.ListNodes(k.name)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes %v %v", nodes, err)
	}
	imgs, err := exec.Output(nodes[0].Command("crictl", "images"))
	if err != nil || !strings.Contains(string(imgs), "scaleproof.local/kind-it") {
		t.Fatalf("loaded image not in the node: %v\n%s", err, imgs)
	}
	// A ClusterIP no Service holds is refused at the node (curl exit 7),
	// never answered from outside the cluster.
	if out, err := exec.CombinedOutputLines(nodes[0].Command("curl", "-s", "-m", "5", "-o", "/dev/null", "http://10.96.255.254:9090/")); err == nil || !strings.Contains(err.Error(), "exit status 7") {
		t.Errorf("an unrouted ClusterIP from the node: %v %v, want refused (curl exit 7)", err, out)
	}
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// buildHello builds a static HTTP server on :8080 that says its host name.
func buildHello(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := "package main\n\nimport (\n\t\"fmt\"\n\t\"net/http\"\n\t\"os\"\n)\n\nfunc main() {\n\th, _ := os.Hostname()\n" +
		"\thttp.HandleFunc(\"/\", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, \"hello from\", h) })\n" +
		"\tpanic(http.ListenAndServe(\":8080\", nil))\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.26.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := osexec.Command("go", "build", "-trimpath", "-o", "hello", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build hello: %v\n%s", err, out)
	}
	return filepath.Join(dir, "hello")
}

func writeTinyImage(t *testing.T, path, ref, bin string) {
	t.Helper()
	lp := filepath.Join(t.TempDir(), "l.tar")
	if err := writeSingleFileTar(lp, "hello", bin); err != nil {
		t.Fatal(err)
	}
	l, err := tarball.LayerFromFile(lp)
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Entrypoint = []string{"/hello"}
	cf.Config.User = "65532:65532"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.MultiRefWriteToFile(path, map[name.Reference]v1.Image{tag: img}); err != nil {
		t.Fatal(err)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitFor polls cond once a second, three minutes at most.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 180; i++ {
		if cond() {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, ctx.Err())
		case <-time.After(time.Second):
		}
	}
	t.Fatalf("%s: not within 3 minutes", what)
}
