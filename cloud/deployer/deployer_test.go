package deployer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	stdlog "log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/scaleproof/scaleproof/cloud"
	"github.com/scaleproof/scaleproof/cloud/cloudfake"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// system is the deployed platform the hand-off makes: it records its calls.
type system struct {
	mu    sync.Mutex
	calls []string
	h     Handoff
	upErr error
}

func (s *system) rec(c string) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}
func (s *system) Name() string { return "kubeconfig" }
func (s *system) Up(context.Context) (platform.Endpoints, error) {
	s.rec("up")
	return platform.Endpoints{ConsoleURL: "http://127.0.0.1:1", EdgeURL: "http://127.0.0.1:2"}, s.upErr
}
func (s *system) Down(context.Context) error                 { s.rec("down"); return nil }
func (s *system) IsUp(context.Context) (bool, error)         { return true, nil }
func (s *system) DumpLogs(_ context.Context, _ string) error { s.rec("dump logs"); return nil }
func (s *system) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

type rig struct {
	p   *cloudfake.Provider
	d   *Deployer
	pf  *platform.OnCluster[Handoff] // d with the system deployed on its cluster, as run puts them together
	sys *system
	img v1.Image
	dir string
}

func newRig(t *testing.T, mod func(*cloud.Options, *cloudfake.Provider)) *rig {
	t.Helper()
	reg := httptest.NewServer(registry.New(registry.Logger(stdlog.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	p := &cloudfake.Provider{Server: "https://127.0.0.1:6443", CAData: []byte("PEM"),
		Repository: strings.TrimPrefix(reg.URL, "http://") + "/p/scaleproof-run/scaleproof-ref"}
	o := cloud.Options{RunID: "20261202-031000-abcdef", TTL: 3 * time.Hour}
	if mod != nil {
		mod(&o, p)
	}
	img, err := random.Image(128, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{p: p, sys: &system{}, img: img, dir: t.TempDir()}
	r.d, err = New(Config{Provider: p, Options: o, Artifacts: r.dir,
		Image: func(context.Context) (v1.Image, string, error) { return img, "sha-0123456789ab", nil }})
	if err != nil {
		t.Fatal(err)
	}
	r.pf = platform.NewOnCluster(r.d, func(_ context.Context, h Handoff) (platform.Platform, error) {
		r.sys.h = h
		return r.sys, nil
	}, platform.OnClusterOptions{LogsDir: filepath.Join(r.dir, "logs")})
	return r
}

func deletes(calls []string) []string {
	var out []string
	for _, c := range calls {
		if strings.HasPrefix(c, "delete ") {
			out = append(out, c)
		}
	}
	return out
}

func TestUpHandoffDown(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	ep, err := r.pf.Up(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ep.ConsoleURL == "" || !slices.Equal(r.sys.Calls(), []string{"up"}) {
		t.Errorf("endpoints %+v, system calls %v", ep, r.sys.Calls())
	}
	h := r.sys.h
	// the image is in the registry under the reference handed off
	ref, err := name.ParseReference(h.Image)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Head(ref); err != nil || !strings.HasSuffix(h.Image, "/scaleproof-ref:sha-0123456789ab") {
		t.Errorf("image %s: %v", h.Image, err)
	}
	// the kubeconfig reaches the cluster with the token file
	cfg, err := clientcmd.LoadFromFile(h.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	name := cloud.ClusterName("20261202-031000-abcdef")
	if cfg.CurrentContext != name || cfg.Clusters[name].Server != "https://127.0.0.1:6443" || string(cfg.Clusters[name].CertificateAuthorityData) != "PEM" ||
		cfg.AuthInfos[name].TokenFile != h.TokenFile || cfg.AuthInfos[name].Token != "" {
		t.Errorf("kubeconfig %+v", cfg)
	}
	if b, _ := os.ReadFile(h.TokenFile); string(b) != "token-1" {
		t.Errorf("token file %q", b)
	}
	if fi, _ := os.Stat(h.TokenFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v", fi.Mode())
	}
	// every resource is labelled with the run and an expiry about 3 h away
	for _, res := range r.p.Resources() {
		exp, ok := res.ExpiresAt()
		if !res.Ours() || !ok || time.Until(exp) < 2*time.Hour || res.Labels[cloud.LabelRunID] != "20261202-031000-abcdef" {
			t.Errorf("%s labels %v", res, res.Labels)
		}
	}

	if err := r.pf.DumpLogs(ctx, filepath.Join(r.dir, "logs")); err != nil {
		t.Fatal(err)
	}
	if err := r.pf.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.pf.Down(ctx); err != nil {
		t.Errorf("second Down: %v", err)
	}
	if got := r.sys.Calls(); !slices.Equal(got, []string{"up", "dump logs", "down"}) {
		t.Errorf("system calls %v", got)
	}
	want := []string{"delete repository scaleproof-20261202-031000-abcdef", "delete node pool scaleproof", "delete cluster " + name}
	if got := deletes(r.p.Calls()); !slices.Equal(got, want) {
		t.Errorf("deletes %v, want %v (reverse creation order)", got, want)
	}
	if left := r.p.Resources(); len(left) != 0 {
		t.Errorf("left %v", left)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "logs", "cloud.json")); err != nil {
		t.Errorf("cloud.json: %v", err)
	}
	var steps []string
	for _, s := range r.pf.Steps() {
		steps = append(steps, s.Name)
	}
	wantSteps := []string{"create cluster " + name, "ensure registry", "push image", "credentials", "deploy",
		"delete repository scaleproof-20261202-031000-abcdef", "delete node pool scaleproof", "delete cluster " + name}
	if !slices.Equal(steps, wantSteps) {
		t.Errorf("steps %v\nwant %v", steps, wantSteps)
	}
}

func TestFailedUpDownDeletesWhatExists(t *testing.T) {
	boom := &cloud.Error{Op: "create", Kind: "quota", Msg: "no CPUs"}
	for _, tc := range []struct {
		name        string
		mod         func(*cloud.Options, *cloudfake.Provider)
		wantDeletes int
		deployed    bool
	}{
		{name: "create fails halfway", mod: func(_ *cloud.Options, p *cloudfake.Provider) { p.FailCreate = boom }, wantDeletes: 2},
		{name: "interrupted during create", mod: func(_ *cloud.Options, p *cloudfake.Provider) { p.FailCreate = context.Canceled }, wantDeletes: 2},
		{name: "registry fails", mod: func(_ *cloud.Options, p *cloudfake.Provider) { p.FailRegistry = boom }, wantDeletes: 2},
		{name: "token fails", mod: func(_ *cloud.Options, p *cloudfake.Provider) { p.FailToken = boom }, wantDeletes: 3},
		{name: "push fails", mod: func(_ *cloud.Options, p *cloudfake.Provider) { p.Repository = "127.0.0.1:1/nothing/here" }, wantDeletes: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.mod)
			if _, err := r.pf.Up(context.Background()); err == nil {
				t.Fatal("Up passed")
			}
			if err := r.pf.Down(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := deletes(r.p.Calls()); len(got) != tc.wantDeletes {
				t.Errorf("deletes %v, want %d", got, tc.wantDeletes)
			}
			if left := r.p.Resources(); len(left) != 0 {
				t.Errorf("left %v", left)
			}
			if len(r.sys.Calls()) != 0 {
				t.Errorf("deployed after a failure: %v", r.sys.Calls())
			}
		})
	}
}

func TestDownReportsWhatIsLeft(t *testing.T) {
	var out strings.Builder
	r := newRig(t, func(o *cloud.Options, p *cloudfake.Provider) {
		o.Out = &out
		p.FailDelete = map[string]error{"cluster " + cloud.ClusterName(o.RunID): errors.New("still busy")}
	})
	if _, err := r.pf.Up(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := r.pf.Down(context.Background())
	if err == nil || !strings.Contains(err.Error(), "still busy") {
		t.Errorf("Down: %v", err)
	}
	if !strings.Contains(out.String(), "not deleted: cluster scaleproof-20261202-031000-abcdef") || !strings.Contains(out.String(), "cloud janitor") {
		t.Errorf("output:\n%s", out.String())
	}
	if got := deletes(r.p.Calls()); len(got) != 3 {
		t.Errorf("went on past the failed delete? %v", got)
	}
}

func TestNoTTLRefused(t *testing.T) {
	p := &cloudfake.Provider{}
	_, err := New(Config{Provider: p, Options: cloud.Options{RunID: "r"}, Artifacts: t.TempDir(),
		Image: func(context.Context) (v1.Image, string, error) { return nil, "", nil }})
	if !errors.Is(err, ErrNoTTL) || !strings.Contains(err.Error(), "--ttl") {
		t.Errorf("err %v", err)
	}
	if len(p.Calls()) != 0 {
		t.Errorf("called the cloud: %v", p.Calls())
	}
	// Up itself refuses too
	d := &Deployer{cfg: Config{Provider: p}}
	if _, err := d.Up(context.Background()); !errors.Is(err, ErrNoTTL) || len(p.Calls()) != 0 {
		t.Errorf("Up without TTL: %v, calls %v", err, p.Calls())
	}
}

func TestAdoptedClusterNeverDeleted(t *testing.T) {
	for _, claims := range []bool{false, true} {
		t.Run(map[bool]string{false: "provider says adopted", true: "provider claims it created it"}[claims], func(t *testing.T) {
			testAdopted(t, claims)
		})
	}
}

func testAdopted(t *testing.T, claims bool) {
	r := newRig(t, func(o *cloud.Options, p *cloudfake.Provider) {
		p.AdoptClaims = claims
		o.Cluster = "theirs"
		p.Add(cloud.Resource{Kind: "cluster", Name: "theirs", ID: "clusters/theirs", Labels: map[string]string{"team": "x"}})
	})
	if _, err := r.pf.Up(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.pf.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range r.p.Calls() {
		if strings.HasPrefix(c, "create") || c == "delete cluster theirs" {
			t.Errorf("call %q on an adopted cluster", c)
		}
	}
	if got := deletes(r.p.Calls()); !slices.Equal(got, []string{"delete repository scaleproof-20261202-031000-abcdef"}) {
		t.Errorf("deletes %v", got)
	}
	// the system is taken down (its namespace waited for), logs first
	if got := r.sys.Calls(); !slices.Equal(got, []string{"up", "dump logs", "down"}) {
		t.Errorf("system calls %v", got)
	}
	if res := r.p.Resources(); len(res) != 1 || res[0].Name != "theirs" {
		t.Errorf("left %v", res)
	}
}

func TestTokenRefresh(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	fire := make(chan time.Time)
	var waits []time.Duration
	var wmu sync.Mutex
	r := newRig(t, func(o *cloud.Options, p *cloudfake.Provider) {
		p.TokenTTL = 15 * time.Minute // as EKS's
		p.Now = func() time.Time { return now }
		o.Now = p.Now
	})
	r.d.cfg.After = func(d time.Duration) <-chan time.Time {
		wmu.Lock()
		waits = append(waits, d)
		wmu.Unlock()
		return fire
	}
	r.d.onRefresh = make(chan error, 1)
	if _, err := r.pf.Up(context.Background()); err != nil {
		t.Fatal(err)
	}
	for want := 2; want <= 3; want++ {
		fire <- now
		if err := <-r.d.onRefresh; err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(r.sys.h.TokenFile); string(b) != "token-"+string(rune('0'+want)) {
			t.Errorf("token file %q after refresh %d", b, want-1)
		}
	}
	if err := r.pf.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	wmu.Lock()
	defer wmu.Unlock()
	if len(waits) < 2 || waits[0] != 10*time.Minute {
		t.Errorf("waits %v: want the first refresh 5 minutes before a 15-minute token expires", waits)
	}
}

func TestRefreshWait(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	d := &Deployer{now: func() time.Time { return now }, cfg: Config{RefreshBefore: 5 * time.Minute}}
	r := &refresher{d: d}
	for _, tc := range []struct {
		left, want time.Duration
	}{
		{time.Hour, 55 * time.Minute},
		{15 * time.Minute, 10 * time.Minute},
		{6 * time.Minute, 3 * time.Minute}, // at most half its life before it
		{time.Second, time.Second},
	} {
		if got := r.wait(cloud.Token{Expiry: now.Add(tc.left)}); got != tc.want {
			t.Errorf("left %s: wait %s, want %s", tc.left, got, tc.want)
		}
	}
	if r.wait(cloud.Token{}) >= 0 {
		t.Errorf("a token that never expires is refreshed")
	}
}

// TestNoSecretUnderArtifacts: the artifacts folder is published (the nightly
// uploads it), so the bearer token must never be written under it, nor a
// kubeconfig that carries or points at it. The credentials live in a
// private folder (0700) that Down removes.
func TestNoSecretUnderArtifacts(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	if _, err := r.pf.Up(ctx); err != nil {
		t.Fatal(err)
	}
	h := r.sys.h
	tok, err := os.ReadFile(h.TokenFile)
	if err != nil || len(tok) == 0 {
		t.Fatalf("token file %s: %q %v", h.TokenFile, tok, err)
	}
	private := filepath.Dir(h.TokenFile)
	if filepath.Dir(h.Kubeconfig) != private {
		t.Errorf("kubeconfig %s and token %s in different folders", h.Kubeconfig, h.TokenFile)
	}
	if fi, err := os.Stat(private); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("credentials folder %s: mode %v, %v; want 0700", private, fi.Mode().Perm(), err)
	}
	if rel, err := filepath.Rel(r.dir, private); err == nil && !strings.HasPrefix(rel, "..") {
		t.Errorf("credentials folder %s is under the artifacts %s", private, r.dir)
	}
	if err := r.pf.DumpLogs(ctx, filepath.Join(r.dir, "logs")); err != nil {
		t.Fatal(err)
	}
	if err := r.pf.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(private); !os.IsNotExist(err) {
		t.Errorf("credentials folder %s still there after Down (%v)", private, err)
	}
	for _, f := range scanFor(t, r.dir, tok, []byte(h.TokenFile), []byte("token-")) {
		t.Errorf("a secret under the artifacts: %s", f)
	}
}

// scanFor walks dir and returns "path: needle" for every file holding one
// of the needles' bytes.
func scanFor(t *testing.T, dir string, needles ...[]byte) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range needles {
			if bytes.Contains(b, s) {
				found = append(found, fmt.Sprintf("%s: %q", p, s))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
