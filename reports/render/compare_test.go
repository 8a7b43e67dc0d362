package render

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/reports"
)

// candidate returns a deep copy of the small file's results with f applied
// to its verdicts (a seeded change).
func candidate(t *testing.T, f func(vs map[string]*reports.Verdict)) *reports.Results {
	t.Helper()
	c := mustRead(t, "testdata/small.jsonl")
	c.Path = "candidate.jsonl"
	m := map[string]*reports.Verdict{}
	for i := range c.Verdicts {
		m[c.Verdicts[i].Scenario] = &c.Verdicts[i]
	}
	f(m)
	return c
}

func TestCompare(t *testing.T) {
	base := mustRead(t, "testdata/small.jsonl")
	cases := []struct {
		name string
		cand func(vs map[string]*reports.Verdict)
		tol  func(*Tolerances)
		want []string // "scenario/metric" that regress, in order
	}{
		{"itself", func(map[string]*reports.Verdict) {}, nil, nil},
		{"up to max +25 % but within the 1 s slack", func(vs map[string]*reports.Verdict) { vs["sustained"].UpToMaxS = 5 }, nil, nil},
		{"up to max +50 %", func(vs map[string]*reports.Verdict) { vs["sustained"].UpToMaxS = 6 }, nil, []string{"sustained/up to max"}},
		{"up to max +50 % with a 60 % tolerance", func(vs map[string]*reports.Verdict) { vs["sustained"].UpToMaxS = 6 },
			func(t *Tolerances) { t.UpToMaxGrowthPct = 60 }, nil},
		{"up to max never reached", func(vs map[string]*reports.Verdict) { vs["sustained"].UpToMaxS = -1 }, nil, []string{"sustained/up to max"}},
		{"back to 1 +20 % exactly", func(vs map[string]*reports.Verdict) { vs["sustained"].BackTo1S = 24 }, nil, nil},
		{"back to 1 +25 %", func(vs map[string]*reports.Verdict) { vs["sustained"].BackTo1S = 25 }, nil, []string{"sustained/back to 1"}},
		{"back to 1 faster", func(vs map[string]*reports.Verdict) { vs["sustained"].BackTo1S = 10 }, nil, nil},
		{"a 5xx where there were none", func(vs map[string]*reports.Verdict) { vs["sustained"].Calls.Server5xx = 1 }, nil, []string{"sustained/5xx"}},
		{"5xx no worse than a failing baseline", func(vs map[string]*reports.Verdict) { vs["burst"].Calls.Server5xx = 2 }, nil, nil},
		{"5xx worse than a failing baseline", func(vs map[string]*reports.Verdict) { vs["burst"].Calls.Server5xx = 3 }, nil, []string{"burst/5xx"}},
		{"429 % + 0.5 pt", func(vs map[string]*reports.Verdict) { vs["sustained"].Calls.TooMany += 11 }, nil, nil},
		{"429 % + 3 pt", func(vs map[string]*reports.Verdict) { vs["sustained"].Calls.TooMany += 70 }, nil, []string{"sustained/429 %"}},
		{"a passing scenario fails", func(vs map[string]*reports.Verdict) { vs["viewer-refused"].Passed = false }, nil, []string{"viewer-refused/verdict"}},
		{"a passing scenario fails, rule off", func(vs map[string]*reports.Verdict) { vs["viewer-refused"].Passed = false },
			func(t *Tolerances) { t.PassedMustPass = false }, nil},
		{"a failing scenario passes", func(vs map[string]*reports.Verdict) { vs["burst"].Passed = true }, nil, nil},
		{"p95 +50 % reported only", func(vs map[string]*reports.Verdict) { vs["sustained"].P95ms = 360 }, nil, nil},
		{"p95 +50 % with a 20 % tolerance", func(vs map[string]*reports.Verdict) { vs["sustained"].P95ms = 360 },
			func(t *Tolerances) { g := 20.0; t.P95GrowthPct = &g }, []string{"sustained/p95"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tol := DefaultTolerances()
			if c.tol != nil {
				c.tol(&tol)
			}
			cmp, err := Compare(base, candidate(t, c.cand), tol)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ch := range cmp.Changes {
				if ch.Verdict == VerdictRegressed {
					got = append(got, ch.Scenario+"/"+ch.Metric)
				}
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") || cmp.Regressed() != (len(c.want) > 0) || cmp.Regressions != len(c.want) {
				t.Errorf("regressions %v (count %d), want %v", got, cmp.Regressions, c.want)
			}
		})
	}
}

func TestCompareMissingScenario(t *testing.T) {
	base := mustRead(t, "testdata/small.jsonl")
	cand := mustRead(t, "testdata/small.jsonl")
	cand.Verdicts = cand.Verdicts[1:] // viewer-refused (passed) not run
	cmp, err := Compare(base, cand, DefaultTolerances())
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Regressions != 1 || cmp.Changes[0].Candidate != "not run" {
		t.Errorf("regressions %d, first change %+v", cmp.Regressions, cmp.Changes[0])
	}
}

func TestCompareUnusable(t *testing.T) {
	base := mustRead(t, "testdata/small.jsonl")
	cases := []struct {
		name string
		mod  func(*reports.Results)
		want string
	}{
		{"incomplete candidate", func(r *reports.Results) { r.Incomplete, r.IncompleteReason = true, reports.ReasonNoEnd }, "incomplete"},
		{"no verdicts", func(r *reports.Results) { r.Verdicts = nil }, "no scenario verdict"},
		{"other profile", func(r *reports.Results) { r.Meta.Profile = "published" }, "profile"},
		{"other max", func(r *reports.Results) { r.Meta.Settings = map[string]string{"max": "5"} }, "max"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cand := mustRead(t, "testdata/small.jsonl")
			c.mod(cand)
			_, err := Compare(base, cand, DefaultTolerances())
			if !errors.Is(err, ErrUnusable) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrUnusable mentioning %q", err, c.want)
			}
		})
	}
}

// TestCompareGolden is the sign-off Markdown of the hand-made regressed run.
func TestCompareGolden(t *testing.T) {
	cmp, err := Compare(mustRead(t, "testdata/small.jsonl"), mustRead(t, "testdata/regressed.jsonl"), DefaultTolerances())
	if err != nil {
		t.Fatal(err)
	}
	var md, js bytes.Buffer
	if err := WriteComparisonMarkdown(&md, cmp); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.md", md.Bytes())
	if err := WriteComparisonJSON(&js, cmp); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.json", js.Bytes())
}

func TestReadTolerances(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, body, wantErr string
		check               func(Tolerances) bool
	}{
		{"empty object keeps defaults", `{}`, "", func(x Tolerances) bool { return x.UpToMaxGrowthPct == 20 && x.PassedMustPass }},
		{"override some", `{"up_to_max_growth_pct": 50, "passed_must_pass": false, "p95_growth_pct": 10}`, "",
			func(x Tolerances) bool {
				return x.UpToMaxGrowthPct == 50 && !x.PassedMustPass && x.BackTo1GrowthPct == 20 && x.P95GrowthPct != nil && *x.P95GrowthPct == 10
			}},
		{"unknown field", `{"up_to_max_pct": 50}`, "unknown field", nil},
		{"negative", `{"max_5xx": -1}`, ">= 0", nil},
		{"not json", `up: 20`, "invalid character", nil},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, string(rune('a'+i))+".json")
			if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			tol, err := ReadTolerances(p)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || !c.check(tol) {
				t.Fatalf("tolerances %+v, err %v", tol, err)
			}
		})
	}
	if _, err := ReadTolerances(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing tolerances file must be an error")
	}
}

// A step baseline against an hpa candidate is compared, with a warning that
// says so, and the header names each run's policy.
func TestCompareDifferentPolicies(t *testing.T) {
	base := mustRead(t, "testdata/small.jsonl")
	cand := mustRead(t, "testdata/small.jsonl")
	cand.Meta.Policy = "hpa"
	cand.Meta.RunID = "another-run"
	cmp, err := Compare(base, cand, DefaultTolerances())
	if err != nil {
		t.Fatal(err)
	}
	if len(cmp.Warnings) != 1 || !strings.Contains(cmp.Warnings[0], "step policy and the candidate the hpa policy") {
		t.Fatalf("warnings %q", cmp.Warnings)
	}
	var b strings.Builder
	if err := WriteComparisonMarkdown(&b, cmp); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, w := range []string{"**Warning:** the baseline ran the step policy", "policy step, run", "policy hpa, run"} {
		if !strings.Contains(md, w) {
			t.Errorf("markdown lacks %q:\n%s", w, md)
		}
	}
	other := mustRead(t, "testdata/small.jsonl")
	other.Meta.RunID = "another-run"
	if same, _ := Compare(base, other, DefaultTolerances()); len(same.Warnings) != 0 {
		t.Errorf("same policy: warnings %q", same.Warnings)
	}
	// A file compared with itself says so (a sign-off of nothing).
	self, _ := Compare(base, mustRead(t, "testdata/small.jsonl"), DefaultTolerances())
	if len(self.Warnings) != 1 || !strings.Contains(self.Warnings[0], "are the same run") {
		t.Errorf("same run: warnings %q", self.Warnings)
	}
}
