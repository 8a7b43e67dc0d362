package kind

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
)

type fakeProber struct{ docker, podman error }

func (f fakeProber) DockerPrivileged(context.Context) error { return f.docker }
func (f fakeProber) Podman(context.Context) error           { return f.podman }

func TestChooseEngine(t *testing.T) {
	caps := errors.New("docker run --privileged: exit status 126: runc create failed: unable to apply caps: operation not permitted")
	gone := errors.New("podman is not installed")
	for _, tc := range []struct {
		name   string
		want   string
		probe  fakeProber
		engine string
		whyHas string
		errHas []string
	}{
		{"auto, docker works", "auto", fakeProber{}, "docker", "privileged container started", nil},
		{"auto, docker refuses privileged", "auto", fakeProber{docker: caps}, "podman", "unable to apply caps", nil},
		{"auto, nothing works", "auto", fakeProber{docker: caps, podman: gone}, "", "", []string{"unable to apply caps", "podman is not installed", "make deps-kind", "apt-get install podman"}},
		{"docker asked, refuses", "docker", fakeProber{docker: caps}, "", "", []string{"--kind-provider docker", "unable to apply caps"}},
		{"podman asked, docker would work", "podman", fakeProber{}, "podman", "--kind-provider podman", nil},
		{"podman asked, missing", "podman", fakeProber{podman: gone}, "", "", []string{"podman is not installed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := ChooseEngine(context.Background(), tc.want, tc.probe)
			if tc.errHas != nil {
				if !errors.Is(err, ErrNoEngine) {
					t.Fatalf("err %v, want ErrNoEngine", err)
				}
				for _, s := range tc.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error lacks %q: %v", s, err)
					}
				}
				return
			}
			if err != nil || e.Name != tc.engine || !strings.Contains(e.Why, tc.whyHas) {
				t.Fatalf("got %+v, %v; want %s because %q", e, err, tc.engine, tc.whyHas)
			}
		})
	}
}

func TestClusterName(t *testing.T) {
	for in, want := range map[string]string{
		"20261201-093000-a1b2c3": "scaleproof-20261201-093000-a1b2c3",
		"Run_ID.x":               "scaleproof-run-id-x",
		"--":                     "scaleproof",
		strings.Repeat("a", 80):  "scaleproof-" + strings.Repeat("a", 39),
	} {
		if got := ClusterName(in); got != want {
			t.Errorf("ClusterName(%q) = %q, want %q", in, got, want)
		}
	}
	if ClusterName("run-1") == ClusterName("run-2") {
		t.Error("two run ids give one cluster name")
	}
}

func TestClusterConfig(t *testing.T) {
	c := ClusterConfig(ClusterConfigOptions{Name: "scaleproof-x", Image: "localhost/scaleproof/kind-node:v1.37.0-abc", StaticCNI: true,
		HostPorts: map[int]int{30081: 41001, 30080: 41000}})
	b, err := RenderClusterConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	y := string(b)
	for _, want := range []string{"kind: Cluster", "apiVersion: kind.x-k8s.io/v1alpha4", "disableDefaultCNI: true", "failCgroupV1: false",
		"role: control-plane", "image: localhost/scaleproof/kind-node:v1.37.0-abc", "containerPort: 30080", "hostPort: 41000", "hostPort: 41001", "listenAddress: 127.0.0.1"} {
		if !strings.Contains(y, want) {
			t.Errorf("config lacks %q:\n%s", want, y)
		}
	}
	if strings.Index(y, "30080") > strings.Index(y, "30081") {
		t.Errorf("port mappings not sorted:\n%s", y)
	}
	if strings.Contains(y, "0.0.0.0") {
		t.Errorf("a port listens beyond loopback:\n%s", y)
	}
	pub := ClusterConfig(ClusterConfigOptions{Name: "n", Image: "kindest/node:v1.37.0"})
	if pub.Networking.DisableDefaultCNI {
		t.Error("kind's published image lost its CNI")
	}
	if !StaticCNI("localhost/scaleproof/kind-node:v1.37.0-abc") || StaticCNI("kindest/node:v1.37.0") {
		t.Error("StaticCNI misjudges")
	}
}

func TestFreeHostPortsDistinct(t *testing.T) {
	p, err := freeHostPorts([]int{30080, 30081})
	if err != nil {
		t.Fatal(err)
	}
	if p[30080] == 0 || p[30081] == 0 || p[30080] == p[30081] {
		t.Fatalf("ports %v", p)
	}
}

// fakeClusters records what the platform asks of kind.
type fakeClusters struct {
	mu        sync.Mutex
	createErr error
	created   []string
	deleted   []string
	loaded    []string
	confined  []string
	logsDir   string
	cfg       *v1alpha4.Cluster
}

func (f *fakeClusters) Create(name string, cfg *v1alpha4.Cluster, kubeconfig string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = append(f.created, name)
	f.cfg = cfg
	if f.createErr != nil {
		return f.createErr
	}
	return os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600)
}
func (f *fakeClusters) Delete(name, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, name)
	return nil
}
func (f *fakeClusters) List() ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var live []string
	for _, c := range f.created {
		gone := false
		for _, d := range f.deleted {
			gone = gone || d == c
		}
		if !gone {
			live = append(live, c)
		}
	}
	return live, nil
}
func (f *fakeClusters) CollectLogs(_, dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logsDir = dir
	if len(f.deleted) > 0 {
		return errors.New("logs asked for after delete")
	}
	return os.WriteFile(filepath.Join(dir, "kind-version.txt"), []byte("fake"), 0o644)
}
func (f *fakeClusters) Confine(_ string, cidrs []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.confined = append(f.confined, cidrs...)
	return nil
}
func (f *fakeClusters) LoadImageArchive(_, archive string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loaded = append(f.loaded, archive)
	return nil
}

func newTestKind(t *testing.T, fc *fakeClusters, mod func(*Config)) *Kind {
	t.Helper()
	cfg := Config{RunID: "t1", Provider: "auto", Artifacts: t.TempDir(), NodePorts: []int{30080, 30081},
		Prober: fakeProber{docker: errors.New("unable to apply caps")},
		EnsureNodeImage: func(context.Context, string) (string, error) {
			return "localhost/scaleproof/kind-node:v1.37.0-abc", nil
		},
		Images: func(context.Context) ([]string, error) { return []string{"/x/ref.tar"}, nil },
	}
	if mod != nil {
		mod(&cfg)
	}
	k, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	k.testAPI = fc
	return k
}

func stepNames(k *Kind) string {
	var s []string
	for _, st := range k.Steps().Steps() {
		n := st.Name
		if st.Err != nil {
			n += "!"
		}
		s = append(s, n)
	}
	return strings.Join(s, ",")
}

func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	fc := &fakeClusters{}
	var out bytes.Buffer
	k := newTestKind(t, fc, func(c *Config) { c.Out = &out })
	got, err := k.Up(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "scaleproof-t1" || got.Kubeconfig != k.Kubeconfig() || got.NodeHost != "127.0.0.1" || got.HostPorts[30080] == 0 || got.HostPorts[30081] == 0 {
		t.Fatalf("deploy got %+v", got)
	}
	if _, err := os.Stat(k.Kubeconfig()); err != nil || filepath.Dir(k.Kubeconfig()) != mustAbs(t, k.cfg.Artifacts) {
		t.Fatalf("kubeconfig %s: %v", k.Kubeconfig(), err)
	}
	if _, err := os.Stat(filepath.Join(k.cfg.Artifacts, "kind-config.yaml")); err != nil {
		t.Fatal(err)
	}
	if len(fc.loaded) != 1 || fc.created[0] != "scaleproof-t1" || !fc.cfg.Networking.DisableDefaultCNI {
		t.Fatalf("fake %+v", fc)
	}
	if want := []string{ServiceSubnet}; !slices.Equal(fc.confined, want) || fc.cfg.Networking.ServiceSubnet != ServiceSubnet || fc.cfg.Networking.PodSubnet != PodSubnet {
		t.Errorf("confined %v (config's subnets %s, %s), want %v: the ranges the cluster is made with", fc.confined, fc.cfg.Networking.ServiceSubnet, fc.cfg.Networking.PodSubnet, want)
	}
	if !strings.Contains(out.String(), "provider podman") || !strings.Contains(out.String(), "unable to apply caps") {
		t.Fatalf("the choice and its reason were not said: %q", out.String())
	}
	if up, _ := k.IsUp(ctx); !up {
		t.Fatal("IsUp false after Up")
	}
	logs := t.TempDir()
	if err := k.DumpLogs(ctx, logs); err != nil {
		t.Fatal(err)
	}
	if fc.logsDir != filepath.Join(logs, "kind") {
		t.Fatalf("logs: kind %q", fc.logsDir)
	}
	if err := k.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if err := k.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if len(fc.deleted) != 1 {
		t.Fatalf("deleted %v (want once)", fc.deleted)
	}
	if up, _ := k.IsUp(ctx); up {
		t.Fatal("IsUp true after Down")
	}
	if keep, budget := k.SystemDown(); keep || budget != 5*time.Second {
		t.Errorf("SystemDown %v %s, want the system's Down cut short at 5 s: the cluster delete removes it", keep, budget)
	}
	if want := "choose provider,node image,create cluster,confine,load images,export logs,delete cluster"; stepNames(k) != want {
		t.Fatalf("steps %s, want %s", stepNames(k), want)
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestFailedCreateIsStillDeleted(t *testing.T) {
	ctx := context.Background()
	fc := &fakeClusters{createErr: errors.New("kubeadm init failed")}
	k := newTestKind(t, fc, nil)
	if _, err := k.Up(ctx); err == nil || !strings.Contains(err.Error(), "kubeadm init failed") || !strings.Contains(err.Error(), "scaleproof-t1") {
		t.Fatalf("err %v", err)
	}
	if len(fc.loaded) != 0 {
		t.Fatal("went on after a failed create")
	}
	if err := k.DumpLogs(ctx, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := k.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if len(fc.deleted) != 1 {
		t.Fatalf("a half-made cluster was left: deleted %v", fc.deleted)
	}
	if !strings.Contains(stepNames(k), "create cluster!") {
		t.Fatalf("steps %s", stepNames(k))
	}
}

func TestKeepLeavesTheCluster(t *testing.T) {
	ctx := context.Background()
	fc := &fakeClusters{}
	var out bytes.Buffer
	k := newTestKind(t, fc, func(c *Config) { c.Keep = true; c.Out = &out })
	if _, err := k.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if err := k.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if keep, _ := k.SystemDown(); len(fc.deleted) != 0 || !keep {
		t.Fatalf("--keep deleted: %v; the system kept: %v", fc.deleted, keep)
	}
	if !strings.Contains(out.String(), "kept cluster scaleproof-t1") || !strings.Contains(out.String(), k.Kubeconfig()) {
		t.Fatalf("out %q", out.String())
	}
}

func TestNoEngineMakesNothing(t *testing.T) {
	ctx := context.Background()
	fc := &fakeClusters{}
	k := newTestKind(t, fc, func(c *Config) {
		c.Prober = fakeProber{docker: errors.New("docker is not installed"), podman: errors.New("podman is not installed")}
	})
	_, err := k.Up(ctx)
	if !errors.Is(err, ErrNoEngine) {
		t.Fatalf("err %v", err)
	}
	if err := k.Down(ctx); err != nil || len(fc.created) != 0 || len(fc.deleted) != 0 {
		t.Fatalf("down %v, fake %+v", err, fc)
	}
	if stepNames(k) != "choose provider!" {
		t.Fatalf("steps %s", stepNames(k))
	}
}

func TestNewRejectsBadProvider(t *testing.T) {
	if _, err := New(Config{RunID: "x", Provider: "lxc"}); err == nil || !strings.Contains(err.Error(), "auto, docker or podman") {
		t.Fatalf("err %v", err)
	}
	if _, err := New(Config{Provider: "auto"}); err == nil {
		t.Fatal("no run id accepted")
	}
}

// TestConfineRules: the Service range gets a REJECT in FORWARD (pods) and
// OUTPUT (the node's own processes), first in the chain, matched on the
// address after NAT and on no interface.
func TestConfineRules(t *testing.T) {
	got := ConfineRules("10.96.0.0/16")
	want := [][]string{
		{"-I", "FORWARD", "1", "-d", "10.96.0.0/16", "-j", "REJECT"},
		{"-I", "OUTPUT", "1", "-d", "10.96.0.0/16", "-j", "REJECT"},
	}
	if len(got) != len(want) {
		t.Fatalf("rules %v, want %v", got, want)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("rule %d: %v, want %v", i, got[i], want[i])
		}
	}
}
