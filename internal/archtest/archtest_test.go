package archtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/scaleproof/scaleproof"

// rule is one import rule. pkg and the patterns name module packages
// relative to the module ("scenarios/..." is scenarios and everything under
// it) or, with a dot or a slash-free standard name, other packages
// ("net/http", "k8s.io/..."): a pattern that is not the path of a module
// package is read as an outside path.
type rule struct {
	pkg   string   // the package (or pattern) the rule binds
	where string   // where the rule is stated
	links bool     // true: the whole dependency graph; false: direct imports
	deny  []string // none of these
	but   []string // except these (a deny pattern's exceptions)
	// only, when set, lists the module packages the package may import
	// directly (an empty non-nil slice: none of the module).
	only []string
	// stdOnly: direct imports from the standard library alone.
	stdOnly bool
}

// rules is the table. Its rows follow the package docs (each names the file)
// and layout.md's section 2.
var rules = []rule{
	// The reference system: the pure core and its wing.
	{pkg: "autoscaler", where: "autoscaler/doc.go", deny: []string{"net/http", "os", "log/slog"}, only: []string{}},
	{pkg: "autoscaler/store", where: "autoscaler/store/doc.go", deny: []string{"net/http"}, only: []string{"autoscaler"}},
	{pkg: "autoscaler/controller", where: "autoscaler/controller/doc.go", links: true, deny: []string{"net/http/httptest", "scenarios/...", "autoscaler/console"}},
	{pkg: "autoscaler/controller/controllertest", where: "autoscaler/controller/controllertest/doc.go", deny: []string{"net/http"}, only: []string{"autoscaler", "autoscaler/controller", "autoscaler/fleet"}},
	{pkg: "autoscaler/controller/kube", where: "autoscaler/controller/kube/doc.go", links: true, deny: []string{"scenarios/...", "autoscaler/console"}},
	{pkg: "autoscaler/console", where: "autoscaler/console/doc.go", links: true, deny: []string{"scenarios/..."}},
	{pkg: "autoscaler/edge", where: "autoscaler/edge/doc.go", only: []string{"autoscaler/fleet", "autoscaler/serve", "autoscaler/faults"}},
	{pkg: "autoscaler/worker", where: "autoscaler/worker/doc.go", only: []string{"autoscaler/serve"}},
	{pkg: "autoscaler/scheduler", where: "autoscaler/scheduler/doc.go", only: []string{"autoscaler/serve"}},
	{pkg: "autoscaler/querier", where: "autoscaler/querier/doc.go", only: []string{"autoscaler/serve", "autoscaler/scheduler", "autoscaler/worker"}},
	{pkg: "autoscaler/promserver", where: "autoscaler/promserver/promserver.go", only: []string{"autoscaler/serve", "autoscaler/api"}},
	{pkg: "autoscaler/serve", where: "autoscaler/serve/serve.go", only: []string{}},
	{pkg: "autoscaler/fleet", where: "autoscaler/fleet/fleet.go", only: []string{}},
	{pkg: "autoscaler/faults", where: "autoscaler/faults/faults.go", only: []string{}},
	{pkg: "autoscaler/api", where: "autoscaler/api/doc.go", stdOnly: true, only: []string{}},
	{pkg: "autoscaler/deploy/kube", where: "autoscaler/deploy/kube/doc.go", stdOnly: true},
	{pkg: "autoscaler/deploy/prometheus", where: "autoscaler/deploy/prometheus/doc.go", stdOnly: true, only: []string{}},
	{pkg: "autoscaler/...", where: "layout.md §2.11: the reference system imports nothing of the harness", links: true,
		deny: []string{"scenarios/...", "sim/...", "reports/...", "kind/...", "cloud/...", "cmd/...", "internal/screenshot"}},

	// The harness.
	{pkg: "scenarios", where: "scenarios/doc.go", links: true,
		deny: []string{"scenarios/platform/local", "scenarios/platform/kubeconfig", "scenarios/platform/external", "autoscaler/...", "sim/...", "kind/...", "cloud/...", "scenarios/target/kube", "k8s.io/..."},
		but:  []string{"autoscaler/api"}},
	{pkg: "scenarios/load", where: "scenarios/load/doc.go", links: true, only: []string{}, deny: []string{"scenarios", "reports/...", "autoscaler/..."}},
	{pkg: "scenarios/consoleclient", where: "scenarios/consoleclient/client.go", only: []string{"autoscaler/api"}},
	{pkg: "scenarios/observe", where: "scenarios/observe/observe.go", only: []string{"scenarios/consoleclient", "scenarios/target"}},
	{pkg: "scenarios/target", where: "scenarios/target/target.go", links: true, deny: []string{"scenarios", "k8s.io/..."}},
	{pkg: "scenarios/target/kube", where: "scenarios/target/kube/doc.go", links: true, deny: []string{"scenarios"}},
	{pkg: "scenarios/platform", where: "scenarios/platform/platform.go", links: true, deny: []string{"scenarios"}},
	{pkg: "scenarios/platform/local", where: "scenarios/platform/local/local.go", links: true, deny: []string{"scenarios"}},
	{pkg: "scenarios/platform/external", where: "scenarios/platform/external/external.go", links: true, deny: []string{"scenarios"}},
	{pkg: "scenarios/platform/kubeconfig", where: "scenarios/platform/kubeconfig/kubeconfig.go", links: true, deny: []string{"scenarios"}},
	{pkg: "scenarios/run", where: "scenarios/run/run.go", links: true, only: []string{"reports", "reports/render"}},
	{pkg: "sim", where: "sim/doc.go", deny: []string{"net/http", "scenarios/platform/..."}},
	{pkg: "sim", where: "layout.md §2.3: the simulator links no client-go", links: true, deny: []string{"k8s.io/...", "scenarios/target/kube"}},
	{pkg: "reports", where: "reports/results.go", links: true, only: []string{}},
	{pkg: "reports/render", where: "reports/render/doc.go", links: true, only: []string{"reports", "reports/render"}},
	{pkg: "internal/screenshot", where: "internal/screenshot/screenshot.go", links: true, deny: []string{"scenarios/...", "autoscaler/..."}},

	// The cluster makers.
	{pkg: "cloud", where: "cloud/cloud.go", links: true, deny: []string{"scenarios/...", "sim/...", "reports/..."}},
	{pkg: "cloud/aks", where: "cloud/aks/doc.go", links: true, deny: []string{"scenarios/..."}},
	{pkg: "cloud/deployer", where: "cloud/deployer/deployer.go", links: true, deny: []string{"scenarios/...", "sim/...", "reports/..."}},
	{pkg: "cloud/...", where: "layout.md §2.9: a cluster maker knows nothing of the tester", links: true, deny: []string{"scenarios/...", "sim/...", "cmd/..."}},
	{pkg: "kind/...", where: "layout.md §2.9: a cluster maker knows nothing of the tester", links: true, deny: []string{"scenarios/...", "sim/...", "cmd/..."}},
	{pkg: "internal/steps", where: "internal/steps/steps.go", only: []string{}},

	// Nothing imports the commands.
	{pkg: "...", where: "layout.md §2: nothing points up", links: true, deny: []string{"cmd/..."}},
}

type pkgInfo struct {
	ImportPath string
	Dir        string
	Imports    []string
	Deps       []string
	Standard   bool
}

// list runs `go list` over the module and returns its packages by path
// relative to the module ("" for none: the module has no root package).
func list(t *testing.T) map[string]pkgInfo {
	t.Helper()
	root := moduleRoot(t)
	cmd := exec.Command("go", "list", "-json=ImportPath,Dir,Imports,Deps", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]pkgInfo{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkgInfo
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if rel, ok := rel(p.ImportPath); ok {
			pkgs[rel] = p
		}
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages of %s; want the whole module", len(pkgs), module)
	}
	return pkgs
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// rel returns path relative to the module, and whether it is in it.
func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

// match reports whether the module-relative or outside path p matches
// pattern ("x/..." is x and everything under it; "..." is everything).
func match(pattern, p string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == pattern
}

// violations returns what p breaks of r, one line each.
func violations(r rule, p pkgInfo, isStd func(string) bool) []string {
	var bad []string
	seen := p.Imports
	if r.links {
		seen = p.Deps
	}
	for _, imp := range seen {
		name := imp
		if rp, ok := rel(imp); ok {
			name = rp
		}
		if slices.ContainsFunc(r.but, func(b string) bool { return match(b, name) }) {
			continue
		}
		for _, d := range r.deny {
			if match(d, name) {
				bad = append(bad, fmt.Sprintf("%s %s %s (denied: %s)", p.ImportPath, verb(r.links), imp, d))
			}
		}
	}
	for _, imp := range p.Imports {
		rp, inModule := rel(imp)
		if r.only != nil && inModule && !slices.ContainsFunc(r.only, func(o string) bool { return match(o, rp) }) {
			bad = append(bad, fmt.Sprintf("%s imports %s (allowed of this module: %v)", p.ImportPath, imp, r.only))
		}
		if r.stdOnly && !isStd(imp) {
			bad = append(bad, fmt.Sprintf("%s imports %s (standard library only)", p.ImportPath, imp))
		}
	}
	return bad
}

func verb(links bool) string {
	if links {
		return "links"
	}
	return "imports"
}

// TestImportRules checks every row of rules against the module as it is.
func TestImportRules(t *testing.T) {
	pkgs := list(t)
	std := stdPackages(t)
	for _, r := range rules {
		t.Run(r.pkg, func(t *testing.T) {
			n := 0
			for name, p := range pkgs {
				if !match(r.pkg, name) {
					continue
				}
				n++
				for _, v := range violations(r, p, func(s string) bool { return std[s] }) {
					t.Errorf("%s — rule stated in %s", v, r.where)
				}
			}
			if n == 0 {
				t.Errorf("rule for %q (stated in %s) matches no package: the package moved; move the rule with it", r.pkg, r.where)
			}
		})
	}
}

// TestRulesCatchViolations shows the checker is not vacuous: a rule broken
// on purpose over made-up packages is reported.
func TestRulesCatchViolations(t *testing.T) {
	isStd := func(s string) bool { return !strings.Contains(s, ".") }
	tests := []struct {
		name string
		r    rule
		p    pkgInfo
		want int
	}{
		{"denied link", rule{links: true, deny: []string{"scenarios/..."}},
			pkgInfo{ImportPath: module + "/kind", Deps: []string{"fmt", module + "/scenarios/platform"}}, 1},
		{"denied import ignores links", rule{deny: []string{"scenarios/..."}},
			pkgInfo{ImportPath: module + "/kind", Deps: []string{module + "/scenarios/platform"}}, 0},
		{"only: outside the list", rule{only: []string{"autoscaler/serve"}},
			pkgInfo{ImportPath: module + "/autoscaler/worker", Imports: []string{module + "/autoscaler/serve", module + "/autoscaler/fleet"}}, 1},
		{"only empty: any module import", rule{only: []string{}},
			pkgInfo{ImportPath: module + "/reports", Imports: []string{"fmt", module + "/autoscaler"}}, 1},
		{"std only", rule{stdOnly: true},
			pkgInfo{ImportPath: module + "/autoscaler/deploy/kube", Imports: []string{"fmt", "sigs.k8s.io/yaml"}}, 1},
		{"denied but excepted", rule{links: true, deny: []string{"autoscaler/..."}, but: []string{"autoscaler/api"}},
			pkgInfo{ImportPath: module + "/scenarios", Deps: []string{module + "/autoscaler/api", module + "/autoscaler"}}, 1},
		{"clean", rule{links: true, deny: []string{"net/http"}, only: []string{}},
			pkgInfo{ImportPath: module + "/autoscaler", Imports: []string{"fmt"}, Deps: []string{"fmt", "net/url"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := violations(tt.r, tt.p, isStd); len(got) != tt.want {
				t.Errorf("violations = %d %q, want %d", len(got), got, tt.want)
			}
		})
	}
}

// mustNot finds a package doc's import rule.
var mustNot = regexp.MustCompile(`(?i)\b(must not import|imports nothing|imports only)\b`)

// TestEveryDocRuleIsChecked fails when a package doc states an import rule
// that the table has no row for.
func TestEveryDocRuleIsChecked(t *testing.T) {
	pkgs := list(t)
	stated := map[string]bool{}
	for _, r := range rules {
		stated[r.where] = true
	}
	root := moduleRoot(t)
	for name, p := range pkgs {
		files, _ := filepath.Glob(filepath.Join(p.Dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			doc := packageDoc(t, f)
			if doc == "" || !mustNot.MatchString(strings.Join(strings.Fields(doc), " ")) {
				continue
			}
			relf, _ := filepath.Rel(root, f)
			if !stated[filepath.ToSlash(relf)] && name != "internal/archtest" {
				t.Errorf("%s states an import rule (%q) that no row of internal/archtest's rules checks", relf, firstRuleLine(doc))
			}
		}
	}
}

func packageDoc(t *testing.T, file string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	if f.Doc == nil {
		return ""
	}
	return f.Doc.Text()
}

func firstRuleLine(doc string) string {
	sc := bufio.NewScanner(strings.NewReader(doc))
	for sc.Scan() {
		if mustNot.MatchString(sc.Text()) {
			return strings.TrimSpace(sc.Text())
		}
	}
	return ""
}

// stdPackages lists the standard library's packages.
func stdPackages(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "std").Output()
	if err != nil {
		t.Fatalf("go list std: %v", err)
	}
	std := map[string]bool{}
	for _, l := range strings.Fields(string(out)) {
		std[l] = true
	}
	return std
}
