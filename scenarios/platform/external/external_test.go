package external

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/scenarios/platform"
)

func writeKeys(t *testing.T, k platform.Keys) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.json")
	if err := platform.WriteKeysFile(p, k); err != nil {
		t.Fatal(err)
	}
	return p
}

func allKeys(group string) platform.Keys {
	return platform.Keys{
		SuperAdmin: platform.Key{Name: "root", Key: "k1", Role: "super_admin"},
		GroupAdmin: platform.Key{Name: "ops", Key: "k2", Role: "group_admin", Groups: []string{group}},
		Viewer:     platform.Key{Name: "v", Key: "k3", Role: "viewer"},
		MCPUser:    platform.Key{Name: "m", Key: "k4", Role: "mcp_user"},
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	good := writeKeys(t, allKeys("g"))
	noViewer := allKeys("g")
	noViewer.Viewer.Role = "super_admin"
	missingRole := writeKeys(t, noViewer)
	garbage := filepath.Join(t.TempDir(), "garbage.json")
	if err := os.WriteFile(garbage, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"missing flags", Config{}, "--console-url"},
		{"console URL not a URL", Config{ConsoleURL: "notaurl", EdgeURL: "http://127.0.0.1:1", KeysFile: good, Group: "g"}, "--console-url"},
		{"edge URL wrong scheme", Config{ConsoleURL: "http://127.0.0.1:1", EdgeURL: "ftp://x", KeysFile: good, Group: "g"}, "--edge-url"},
		{"keys file missing", Config{ConsoleURL: "http://127.0.0.1:1", EdgeURL: "http://127.0.0.1:1", KeysFile: "/nonexistent/keys.json", Group: "g"}, "read keys file"},
		{"keys file garbage", Config{ConsoleURL: "http://127.0.0.1:1", EdgeURL: "http://127.0.0.1:1", KeysFile: garbage, Group: "g"}, "keys file"},
		{"keys file without a viewer", Config{ConsoleURL: "http://127.0.0.1:1", EdgeURL: "http://127.0.0.1:1", KeysFile: missingRole, Group: "g"}, "no viewer key"},
		{"no group admin of the group", Config{ConsoleURL: "http://127.0.0.1:1", EdgeURL: "http://127.0.0.1:1", KeysFile: good, Group: "other"}, "group_admin of other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestUp(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
	defer ok.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	defer down.Close()
	keys := writeKeys(t, allKeys("g"))

	x, err := New(Config{Name: "GKE", ConsoleURL: ok.URL + "/", EdgeURL: ok.URL, KeysFile: keys, Group: "g"})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := x.Up(context.Background())
	if err != nil || ep.ConsoleURL != ok.URL || ep.Keys.Viewer.Key != "k3" || x.Name() != "GKE" {
		t.Fatalf("Up: %+v %v", ep, err)
	}
	x, _ = New(Config{ConsoleURL: ok.URL, EdgeURL: down.URL, KeysFile: keys, Group: "g"})
	if _, err := x.Up(context.Background()); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("Up with an edge answering 503: %v", err)
	}
	if err := x.Down(context.Background()); err != nil {
		t.Fatalf("Down deletes nothing and never fails: %v", err)
	}
}
