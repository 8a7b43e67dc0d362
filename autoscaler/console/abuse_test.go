package console_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/scaleproof/scaleproof/autoscaler/store"
)

// TestAuthenticateIsConstantTime reads keys.go: Authenticate compares the
// token with crypto/subtle.ConstantTimeCompare, over every key (no return
// or break inside the loop), and never compares the token itself with ==.
func TestAuthenticateIsConstantTime(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "keys.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var fn *ast.FuncDecl
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == "Authenticate" {
			fn = fd
		}
	}
	if fn == nil {
		t.Fatal("keys.go has no Authenticate")
	}
	calls, loops := 0, 0
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "ConstantTimeCompare" {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "subtle" {
					calls++
				}
			}
		case *ast.RangeStmt, *ast.ForStmt:
			loops++
			ast.Inspect(n, func(m ast.Node) bool {
				switch m := m.(type) {
				case *ast.ReturnStmt:
					t.Errorf("%s: return inside the key loop: the comparison time depends on which key matched", fset.Position(m.Pos()))
				case *ast.BranchStmt:
					if m.Tok == token.BREAK {
						t.Errorf("%s: break inside the key loop", fset.Position(m.Pos()))
					}
				}
				return true
			})
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				for _, side := range []ast.Expr{n.X, n.Y} {
					if id, ok := side.(*ast.Ident); ok && id.Name == "token" {
						if lit, ok := other(n, side).(*ast.BasicLit); !ok || lit.Value != `""` {
							t.Errorf("%s: the token is compared with %s", fset.Position(n.Pos()), n.Op)
						}
					}
				}
			}
		}
		return true
	})
	if calls == 0 || loops == 0 {
		t.Errorf("Authenticate: %d subtle.ConstantTimeCompare calls in %d loops, want one over every key", calls, loops)
	}
}

func other(b *ast.BinaryExpr, side ast.Expr) ast.Expr {
	if side == b.X {
		return b.Y
	}
	return b.X
}

// TestRefusedRequestsAllAudited: refused changes sent at once, by several
// callers on several endpoints, each leave exactly one audit entry with the
// caller and error:forbidden (or error:invalid): none is lost.
func TestRefusedRequestsAllAudited(t *testing.T) {
	r := newRig(t)
	srv := httptest.NewServer(r.h)
	defer srv.Close()
	type attempt struct {
		caller, method, path, body, errTag string
	}
	var attempts []attempt
	for i := range 20 {
		attempts = append(attempts,
			attempt{"v", "PUT", workers, `{"max_count": 3}`, "forbidden"},
			attempt{"m", "PUT", workers, `{"count": 2}`, "forbidden"},
			attempt{"gb", "POST", "/api/v1/groups/g1/zones/a/rebalance", ``, "forbidden"},
			attempt{"ga", "PUT", "/api/v1/config/autorebalance", `{"enabled": true}`, "forbidden"},
			attempt{"ga", "PUT", workers, fmt.Sprintf(`{"count": %d}`, 10+i), "invalid"},
		)
	}
	before, err := r.store.Audit(store.AuditQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	codes := make([]int, len(attempts))
	for i, a := range attempts {
		wg.Go(func() {
			req, _ := http.NewRequest(a.method, srv.URL+a.path, strings.NewReader(a.body))
			req.Header.Set("Authorization", "Bearer "+keyOf[a.caller])
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	after, err := r.store.Audit(store.AuditQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range after[:len(after)-len(before)] {
		got[e.Actor+" "+e.Tags["error"]]++
	}
	want := map[string]int{"v forbidden": 20, "m forbidden": 20, "gb forbidden": 20, "ga forbidden": 20, "ga invalid": 20}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("audit has %d %q entries, want %d (all: %v)", got[k], k, n, got)
		}
	}
	for i, c := range codes {
		if want := map[string]int{"forbidden": 403, "invalid": 422}[attempts[i].errTag]; c != want {
			t.Errorf("%+v: %d, want %d", attempts[i], c, want)
		}
	}
}

// TestKeysNotInConsoleLogs: whatever is sent with a key (refused,
// malformed, invalid, unknown key), the console's log never holds a key.
func TestKeysNotInConsoleLogs(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	r := newRigLogging(t, slog.New(slog.NewJSONHandler(lockedWriter{&mu, &buf}, &slog.HandlerOptions{Level: slog.LevelDebug})))
	for caller := range keyOf {
		for _, q := range []struct{ method, path, body string }{
			{"PUT", workers, `{"max_count": 2}`}, {"PUT", workers, `{"count": 9}`}, {"PUT", workers, `{`},
			{"POST", "/api/v1/groups/g1/zones/a/rebalance", ""}, {"PUT", "/api/v1/config/autorebalance", `{"interval_seconds": -1}`},
			{"GET", "/api/v1/audit?limit=0", ""}, {"GET", "/api/v1/groups/g1/zones/a/workers", ""},
		} {
			r.do(t, caller, q.method, q.path, q.body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if buf.Len() == 0 {
		t.Fatal("the console logged nothing: the test proves nothing")
	}
	for caller, k := range keyOf {
		if bytes.Contains(buf.Bytes(), []byte(k)) {
			t.Errorf("the console log holds %s's key", caller)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// newRigLogging is newRig with the controller and the console logging to log.
func newRigLogging(t *testing.T, log *slog.Logger) *rig {
	t.Helper()
	return newRigWith(t, log, nil)
}
