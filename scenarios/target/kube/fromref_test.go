package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// apiServer answers the two GETs FromRef's constructors make (the HPA
// worker, the ScaledObject queriers) on a loopback port; anything else 404.
func apiServer(t *testing.T) *httptest.Server {
	t.Helper()
	h := hpaObject("worker", "worker", ptr(int32(2)), 10, 2, nil)
	h.APIVersion, h.Kind = "autoscaling/v2", "HorizontalPodAutoscaler"
	objs := map[string]any{
		"/apis/autoscaling/v2/namespaces/sp-1/horizontalpodautoscalers/worker": h,
		"/apis/keda.sh/v1alpha1/namespaces/sp-1/scaledobjects/queriers":        so(map[string]any{"minReplicaCount": int64(10), "maxReplicaCount": int64(50)}, nil, nil).Object,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		o, ok := objs[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			w.WriteHeader(http.StatusNotFound)
			_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"%s not found"}`, r.URL.Path)
			return
		}
		_ = json.NewEncoder(w).Encode(o)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func kubeconfig(t *testing.T, dir, name, server string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	y := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: %s-token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, server, name)
	if err := os.WriteFile(p, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFromRef(t *testing.T) {
	srv := apiServer(t)
	dir := t.TempDir()
	run, admin, viewer := kubeconfig(t, dir, "run", srv.URL), kubeconfig(t, dir, "admin", srv.URL), kubeconfig(t, dir, "viewer", srv.URL)
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("{not yaml: ["), 0o600); err != nil {
		t.Fatal(err)
	}
	ref := func(kind string, mod func(*platform.TargetRef)) *platform.TargetRef {
		r := &platform.TargetRef{Kind: kind, Namespace: ns, Deployment: "worker", HPA: "worker",
			Kubeconfig: run, AdminKubeconfig: admin, ViewerKubeconfig: viewer}
		if kind == "keda" {
			r.Deployment, r.ScaledObject, r.HPA = "querier", "queriers", ""
		}
		if mod != nil {
			mod(r)
		}
		return r
	}
	for _, c := range []struct {
		name string
		ref  *platform.TargetRef
		kind target.Kind // the Target's, when no error
		err  string
	}{
		{"hpa", ref("hpa", nil), target.HPA, ""},
		{"keda", ref("keda", nil), target.KEDA, ""},
		{"nil ref", nil, "", "no target ref"},
		{"unknown kind", ref("vpa", nil), "", `target "vpa": want one of console, hpa, keda`},
		{"console", ref("console", nil), "", "NewConsole"},
		{"missing viewer kubeconfig", ref("hpa", func(r *platform.TargetRef) { r.ViewerKubeconfig = filepath.Join(dir, "nope") }), "", "viewer kubeconfig"},
		{"no admin kubeconfig", ref("hpa", func(r *platform.TargetRef) { r.AdminKubeconfig = "" }), "", "no admin kubeconfig"},
		{"unreadable run kubeconfig", ref("keda", func(r *platform.TargetRef) { r.Kubeconfig = bad }), "", "run kubeconfig"},
		{"hpa not on the server", ref("hpa", func(r *platform.TargetRef) { r.HPA = "other" }), "", "not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg, err := FromRef(context.Background(), c.ref)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tg.Kind() != c.kind {
				t.Errorf("Kind = %s, want %s", tg.Kind(), c.kind)
			}
			if err := tg.Contracts().Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
