package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/scaleproof/scaleproof/internal/skips"
)

// The GitHub workflows (.github/workflows) as far as these tests read them.
// actionlint (make lint-workflows, part of make test) checks their syntax,
// expressions and action inputs; these tests check what actionlint cannot
// know: the nightly's own rules (OIDC only, a TTL, the janitor always last,
// timeouts under the TTL, two nightlies never overlapping) and that every
// scaleproof command line in them is one the binary accepts.

type ghWorkflow struct {
	On          map[string]any    `json:"on"`
	Permissions map[string]string `json:"permissions"`
	Concurrency struct {
		Group            string `json:"group"`
		CancelInProgress *bool  `json:"cancel-in-progress"`
	} `json:"concurrency"`
	Jobs map[string]ghJob `json:"jobs"`
}

type ghJob struct {
	Needs          any               `json:"needs"`
	If             string            `json:"if"`
	TimeoutMinutes int               `json:"timeout-minutes"`
	Permissions    map[string]string `json:"permissions"`
	Strategy       struct {
		FailFast *bool          `json:"fail-fast"`
		Matrix   map[string]any `json:"matrix"`
	} `json:"strategy"`
	Steps []ghStep `json:"steps"`
}

type ghStep struct {
	Name           string         `json:"name"`
	Uses           string         `json:"uses"`
	Run            string         `json:"run"`
	If             string         `json:"if"`
	TimeoutMinutes int            `json:"timeout-minutes"`
	With           map[string]any `json:"with"`
}

const workflowsDir = "../../.github/workflows"

// parseWorkflow reads a workflow's YAML. YAML 1.1 reads the key `on` as the
// boolean true, so it arrives as "true".
func parseWorkflow(text string) (ghWorkflow, error) {
	var raw map[string]any
	if err := yaml.Unmarshal([]byte(text), &raw); err != nil {
		return ghWorkflow{}, err
	}
	if v, ok := raw["true"]; ok {
		raw["on"] = v
		delete(raw, "true")
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return ghWorkflow{}, err
	}
	var w ghWorkflow
	err = json.Unmarshal(b, &w)
	return w, err
}

func readWorkflow(t *testing.T, name string) (ghWorkflow, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(workflowsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	w, err := parseWorkflow(string(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return w, string(b)
}

var (
	majorPin  = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@v[0-9]+$`)
	secretRef = regexp.MustCompile(`secrets\.`)
	ttlFlag   = regexp.MustCompile(`--ttl\s+([0-9]+)h\b`)
)

// nightlyProblems lists every way the nightly workflow (parsed w, text as
// written) breaks the nightly's rules (docs/cloud.md, "The nightly
// workflow"); none is the pass.
func nightlyProblems(w ghWorkflow, text string) []string {
	var p []string
	add := func(f string, a ...any) { p = append(p, fmt.Sprintf(f, a...)) }
	if _, ok := w.On["schedule"]; !ok {
		add("no schedule: the nightly must run by itself")
	}
	if _, ok := w.On["workflow_dispatch"]; !ok {
		add("no workflow_dispatch: a maintainer cannot start it by hand")
	}
	if w.Concurrency.Group == "" || w.Concurrency.CancelInProgress == nil || *w.Concurrency.CancelInProgress {
		add("concurrency: a group with cancel-in-progress false is needed so two nightlies never overlap (and a running one is never cancelled mid-teardown)")
	}
	if secretRef.MatchString(text) {
		add("a secret is read: the clouds are reached with OIDC federation only, ids in repository variables")
	}
	run, ok := w.Jobs["run"]
	if !ok {
		return append(p, "no job named run")
	}
	if run.Permissions["id-token"] != "write" || run.Permissions["contents"] != "read" {
		add("job run: permissions must be id-token: write, contents: read (have %v)", run.Permissions)
	}
	for _, c := range []string{"gke", "eks", "aks"} {
		if !strings.Contains(fmt.Sprint(run.Strategy.Matrix["cloud"]), `"`+c+`"`) {
			add("job run: the matrix does not run %s by default", c)
		}
	}
	if run.Strategy.FailFast == nil || *run.Strategy.FailFast {
		add("job run: fail-fast must be false, or one cloud's failure cancels the others mid-run (and their teardown)")
	}
	var runStep, janitor, upload *ghStep
	for i := range run.Steps {
		s := &run.Steps[i]
		switch {
		case strings.Contains(s.Run, "bin/scaleproof run "):
			runStep = s
		case strings.Contains(s.Run, "bin/scaleproof cloud janitor"):
			janitor = s
		case strings.HasPrefix(s.Uses, "actions/upload-artifact@"):
			upload = s
		}
	}
	ttl := 0
	switch {
	case runStep == nil:
		add("job run: no step runs bin/scaleproof run")
	default:
		if m := ttlFlag.FindStringSubmatch(runStep.Run); m == nil {
			add("job run: bin/scaleproof run has no --ttl in hours: Up refuses to start without one")
		} else {
			fmt.Sscan(m[1], &ttl)
		}
		if !strings.Contains(runStep.Run, "--profile published") {
			add("job run: the run is not the published profile")
		}
		if !strings.Contains(runStep.Run, "--artifacts") {
			add("job run: the run names no --artifacts folder, so the upload finds nothing")
		}
	}
	if upload == nil || upload.If != "always()" {
		add("job run: the results and logs must be uploaded with if: always()")
	}
	if janitor == nil || janitor.If != "always()" || janitor != &run.Steps[len(run.Steps)-1] {
		add("job run: the last step must be the janitor (bin/scaleproof cloud janitor) with if: always()")
	}
	for name, j := range w.Jobs {
		if j.TimeoutMinutes <= 0 {
			add("job %s: no timeout-minutes", name)
		}
	}
	if ttl > 0 && run.TimeoutMinutes >= ttl*60 {
		add("job run: timeout-minutes %d is not below the TTL (%d min): the janitor could delete a cluster the run still uses", run.TimeoutMinutes, ttl*60)
	}
	report, ok := w.Jobs["report"]
	if !ok {
		return append(p, "no job named report")
	}
	if fmt.Sprint(report.Needs) != "run" && !slices.Contains(asStrings(report.Needs), "run") {
		add("job report: must need run")
	}
	var all strings.Builder
	for _, s := range report.Steps {
		all.WriteString(s.Run + "\n")
	}
	for _, want := range []string{"bin/scaleproof report --published", "bin/scaleproof compare ", "No baseline", "gh run download"} {
		if !strings.Contains(all.String(), want) {
			add("job report: no step has %q", want)
		}
	}
	return p
}

func asStrings(v any) []string {
	l, _ := v.([]any)
	var s []string
	for _, x := range l {
		s = append(s, fmt.Sprint(x))
	}
	return s
}

// usesProblems: every action is pinned to a major version (owner/repo@vN)
// or is local (./...).
func usesProblems(w ghWorkflow) []string {
	var p []string
	for name, j := range w.Jobs {
		for _, s := range j.Steps {
			if s.Uses != "" && !strings.HasPrefix(s.Uses, "./") && !majorPin.MatchString(s.Uses) {
				p = append(p, fmt.Sprintf("job %s: %s is not pinned to a major version (owner/repo@vN)", name, s.Uses))
			}
		}
	}
	return p
}

// TestNightlyWorkflow: the nightly workflow keeps the nightly's rules, and
// each rule's check fails when the workflow is broken that way.
func TestNightlyWorkflow(t *testing.T) {
	w, text := readWorkflow(t, "nightly.yml")
	if p := append(nightlyProblems(w, text), usesProblems(w)...); len(p) > 0 {
		t.Fatalf("nightly.yml:\n  %s", strings.Join(p, "\n  "))
	}
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"no TTL", "--ttl 3h ", "", "no --ttl"},
		{"janitor only on success", "        if: always()\n        timeout-minutes: 25\n", "        timeout-minutes: 25\n", "the last step must be the janitor"},
		{"upload only on success", "        if: always()\n        uses: actions/upload-artifact@v7\n", "        uses: actions/upload-artifact@v7\n", "uploaded with if: always()"},
		{"a stored key", "      - uses: actions/setup-go@v6\n", "      - uses: actions/setup-go@v6\n        env:\n          AWS_SECRET_ACCESS_KEY: ${{ secrets.AWS_SECRET_ACCESS_KEY }}\n", "a secret is read"},
		{"no id token", "      id-token: write # the OIDC token the clouds trust\n", "", "id-token: write"},
		{"overlapping nightlies", "  cancel-in-progress: false\n", "  cancel-in-progress: true\n", "concurrency"},
		{"a job without a timeout", "    timeout-minutes: 20\n", "", "job report: no timeout-minutes"},
		{"a run longer than its TTL", "    timeout-minutes: 175\n", "    timeout-minutes: 200\n", "not below the TTL"},
		{"fail-fast", "      fail-fast: false", "      fail-fast: true", "fail-fast"},
		{"no baseline message", "No baseline:", "Nothing to compare:", `"No baseline"`},
		{"an action on a branch", "actions/setup-go@v6", "actions/setup-go@main", "not pinned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(text, tc.old) {
				t.Fatalf("nightly.yml has no %q to break", tc.old)
			}
			broken := strings.Replace(text, tc.old, tc.new, 1)
			bw, err := parseWorkflow(broken)
			if err != nil {
				t.Fatal(err)
			}
			p := strings.Join(append(nightlyProblems(bw, broken), usesProblems(bw)...), "\n")
			if !strings.Contains(p, tc.want) {
				t.Errorf("broken (%s): want a problem containing %q, got:\n%s", tc.name, tc.want, p)
			}
		})
	}
}

// TestJanitorWorkflow: the janitor on its own runs by itself, with OIDC
// only, pinned actions and a timeout.
func TestJanitorWorkflow(t *testing.T) {
	w, text := readWorkflow(t, "janitor.yml")
	p := usesProblems(w)
	if _, ok := w.On["schedule"]; !ok {
		p = append(p, "no schedule")
	}
	if secretRef.MatchString(text) {
		p = append(p, "a secret is read")
	}
	j, ok := w.Jobs["janitor"]
	switch {
	case !ok:
		p = append(p, "no job named janitor")
	case j.TimeoutMinutes <= 0:
		p = append(p, "no timeout-minutes")
	case j.Permissions["id-token"] != "write":
		p = append(p, "no id-token: write")
	case len(j.Steps) == 0 || !strings.Contains(j.Steps[len(j.Steps)-1].Run, "bin/scaleproof cloud janitor"):
		p = append(p, "the last step is not bin/scaleproof cloud janitor")
	}
	if len(p) > 0 {
		t.Fatalf("janitor.yml:\n  %s", strings.Join(p, "\n  "))
	}
}

// scaleproofInvocations returns every `bin/scaleproof ...` command line in
// the run: scripts of the workflows, as argument lists for one cloud: the
// words after bin/scaleproof up to a redirection, pipe or ||, with "$CLOUD"
// as cloud, "${flags[@]}" as that cloud's flags (hack/cloud-flags.sh's
// output), $DRY_RUN as --dry-run and any other word with a $ as "x".
func scaleproofInvocations(script, cloud string, flags []string) [][]string {
	script = strings.ReplaceAll(script, "\\\n", " ")
	var out [][]string
	for _, line := range strings.Split(script, "\n") {
		i := strings.Index(line, "bin/scaleproof ")
		if i < 0 {
			continue
		}
		var args []string
	words:
		for _, w := range strings.Fields(line[i+len("bin/scaleproof "):]) {
			switch {
			case w == "|" || w == "||" || w == "&&" || w == ";" || strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>"):
				break words
			case w == `"$CLOUD"`:
				args = append(args, cloud)
			case w == `"${flags[@]}"`:
				args = append(args, flags...)
			case w == "$DRY_RUN":
				args = append(args, "--dry-run")
			case strings.Contains(w, "$"):
				args = append(args, "x")
			default:
				args = append(args, w)
			}
		}
		out = append(out, args)
	}
	return out
}

// TestWorkflowCommandLines: every scaleproof command line in the workflows,
// for each cloud with the flags hack/cloud-flags.sh makes from the
// repository's variables, is one the binary accepts (`... --help` exits 0:
// the command exists and knows every flag). Until the cloud commands are on
// the branch (run --ttl, cloud janitor), their lines are left out and the
// test records a skip after checking the others.
func TestWorkflowCommandLines(t *testing.T) {
	if builtHarness == "" {
		t.Skip("runs the binary; skipped in -short mode")
	}
	files, err := filepath.Glob(filepath.Join(workflowsDir, "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no workflows in %s: %v", workflowsDir, err)
	}
	env := append(os.Environ(), "GKE_PROJECT=my-project", "GKE_LOCATION=us-central1", "EKS_REGION=us-east-1",
		"AZURE_SUBSCRIPTION_ID=00000000-0000-0000-0000-000000000000", "AKS_RESOURCE_GROUP=scaleproof", "AKS_LOCATION=eastus")
	var lines [][]string
	for _, cloud := range []string{"gke", "eks", "aks"} {
		cmd := exec.Command("../../hack/cloud-flags.sh", cloud)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("hack/cloud-flags.sh %s: %v", cloud, err)
		}
		flags := strings.Split(strings.TrimSpace(string(out)), "\n")
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			w, err := parseWorkflow(string(b))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for _, j := range w.Jobs {
				for _, s := range j.Steps {
					lines = append(lines, scaleproofInvocations(s.Run, cloud, flags)...)
				}
			}
		}
	}
	// the report and compare lines are the same for the three clouds: once each
	slices.SortFunc(lines, func(a, b []string) int { return strings.Compare(strings.Join(a, " "), strings.Join(b, " ")) })
	lines = slices.CompactFunc(lines, slices.Equal[[]string])
	var used []string
	for _, l := range lines {
		used = append(used, strings.Join(l[:min(2, len(l))], " "))
	}
	for _, want := range []string{"run --platform", "cloud janitor", "report --published", "compare x"} {
		if !slices.Contains(used, want) {
			t.Fatalf("the workflows have no `scaleproof %s ...` (found %q): the extraction is broken", want, used)
		}
	}
	cloudOut, cloudErr := exec.Command(builtHarness, "cloud", "janitor", "--help").CombinedOutput()
	deferred := 0
	for _, l := range lines {
		if cloudErr != nil && (l[0] == "run" || l[0] == "cloud") {
			deferred++ // needs the cloud flags and commands
			continue
		}
		out, err := exec.Command(builtHarness, append(slices.Clone(l), "--help")...).CombinedOutput()
		if err != nil {
			t.Errorf("scaleproof %s --help: %v\n%s", strings.Join(l, " "), err, firstLine(string(out)))
		}
	}
	if deferred > 0 && !t.Failed() {
		skips.Skip(t, fmt.Sprintf("%d of %d command lines (run on a cloud, cloud janitor) wait for the cloud commands, not on this branch yet (scaleproof cloud janitor --help: %s); the others are accepted",
			deferred, len(lines), strings.TrimSpace(firstLine(string(cloudOut)))))
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
