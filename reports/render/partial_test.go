package render

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/reports"
)

// TestPartialFile simulates a run killed at various moments: the results
// file is cut at a line boundary (the end record never written) or in the
// middle of a line (killed mid-write). Every cut must read back as
// incomplete with the right reason and render in every format, marked
// incomplete, with the scenario that was running shown without a verdict.
func TestPartialFile(t *testing.T) {
	full, err := os.ReadFile("testdata/small.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(full, []byte("\n"))
	// offset of the start of line i (0-based)
	at := func(i int) int {
		n := 0
		for _, l := range lines[:i] {
			n += len(l)
		}
		return n
	}
	burstVerdict := -1
	for i, l := range lines {
		if bytes.Contains(l, []byte(`"kind":"verdict"`)) && bytes.Contains(l, []byte(`"scenario":"burst"`)) {
			burstVerdict = i
		}
	}
	if burstVerdict < 0 {
		t.Fatal("testdata/small.jsonl has no burst verdict")
	}
	cases := []struct {
		name       string
		cut        int
		reason     string
		noVerdicts []string // scenarios shown without a verdict
	}{
		{"after the run record", at(1), reports.ReasonNoEnd, nil},
		{"mid-line in the run's second line", at(1) + 10, reports.ReasonCut, nil},
		{"mid-line before the burst verdict", at(burstVerdict) + len(lines[burstVerdict])/2, reports.ReasonCut, []string{"burst"}},
		{"at the line before the burst verdict", at(burstVerdict), reports.ReasonNoEnd, []string{"burst"}},
		{"before the end record", at(len(lines) - 2), reports.ReasonNoEnd, nil},
		{"mid-way through the end record", at(len(lines)-2) + 5, reports.ReasonCut, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := reports.Parse("killed.jsonl", bytes.NewReader(full[:c.cut]))
			if err != nil {
				t.Fatalf("a killed run's file must read back: %v", err)
			}
			if !res.Incomplete || res.IncompleteReason != c.reason {
				t.Fatalf("incomplete %v reason %q, want true %q", res.Incomplete, res.IncompleteReason, c.reason)
			}
			for _, v := range res.Views() {
				want := false
				for _, n := range c.noVerdicts {
					want = want || n == v.Name
				}
				if (v.Verdict == nil) != want {
					t.Errorf("%s: verdict %v, want missing %v", v.Name, v.Verdict != nil, want)
				}
			}
			runs := []*reports.Results{res}
			for _, f := range Formats {
				var b bytes.Buffer
				if err := Render(&b, f, runs, Options{Published: true}); err != nil {
					t.Fatalf("render %s: %v", f, err)
				}
				out := b.String()
				switch f {
				case "text", "markdown", "html":
					if !strings.Contains(out, "INCOMPLETE") || !strings.Contains(out, "(incomplete)") {
						t.Errorf("%s output not marked incomplete:\n%s", f, trimOut(out))
					}
					if len(c.noVerdicts) > 0 && !strings.Contains(out, "no verdict") && !strings.Contains(out, "No verdict") {
						t.Errorf("%s output does not say the running scenario has no verdict", f)
					}
				case "json":
					var rep JSONReport
					if err := json.Unmarshal(b.Bytes(), &rep); err != nil {
						t.Fatal(err)
					}
					if !rep.Runs[0].Incomplete || rep.Runs[0].IncompleteReason != c.reason || rep.Runs[0].ExitCode != nil {
						t.Errorf("json run: incomplete %v reason %q exit code %v", rep.Runs[0].Incomplete, rep.Runs[0].IncompleteReason, rep.Runs[0].ExitCode)
					}
				case "junit":
					if !strings.Contains(out, `name="run complete"`) || !strings.Contains(out, "results incomplete") {
						t.Errorf("junit: no failed \"run complete\" case:\n%s", trimOut(out))
					}
				}
			}
		})
	}
}

func trimOut(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}

func TestParseErrors(t *testing.T) {
	run := `{"kind":"run","data":{"schema":"scaleproof.results/v1","platform":"local","profile":"quick","started":"2026-11-30T10:00:00Z"}}` + "\n"
	end := `{"kind":"end","data":{"ended":"2026-11-30T10:01:00Z","exit_code":0}}` + "\n"
	cases := []struct {
		name, in, wantErr string
		incomplete        bool
	}{
		{"complete", run + end, "", false},
		{"unknown kind skipped", run + `{"kind":"future","data":{}}` + "\n" + end, "", false},
		{"no end", run, "", true},
		{"empty", "", "no run record", false},
		{"not ours", `{"hello":1}` + "\n" + `{"x":2}` + "\n", "no run record", false},
		{"other schema", strings.Replace(run, "v1", "v9", 1) + end, `schema "scaleproof.results/v9"`, false},
		{"bad line inside", run + "garbage\n" + end, "line 2", false},
		{"bad data of a known kind", run + `{"kind":"second","data":{"t":"x"}}` + "\n" + end, "line 2", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := reports.Parse("x.jsonl", strings.NewReader(c.in))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Incomplete != c.incomplete {
				t.Errorf("incomplete = %v, want %v", res.Incomplete, c.incomplete)
			}
		})
	}
}

// TestWriterRoundTrip writes a file with the Writer, as run does, and reads
// every kind back.
func TestWriterRoundTrip(t *testing.T) {
	path := t.TempDir() + "/results.jsonl"
	w, err := reports.Create(path, reports.RunMeta{RunID: "r1", Platform: "local", Profile: "quick"})
	if err != nil {
		t.Fatal(err)
	}
	small := mustRead(t, "testdata/small.jsonl")
	for _, s := range small.Scenarios {
		mustWrite(t, w, reports.KindScenario, s)
	}
	for _, s := range small.Samples {
		mustWrite(t, w, reports.KindSampleRaw, s)
	}
	for _, s := range small.Seconds {
		mustWrite(t, w, reports.KindSecond, s)
	}
	for _, e := range small.Events {
		mustWrite(t, w, reports.KindEvent, e)
	}
	for _, f := range small.ReadyzFailures {
		mustWrite(t, w, reports.KindReadyz, f)
	}
	for _, v := range small.Verdicts {
		mustWrite(t, w, reports.KindVerdict, v)
	}
	if err := w.Close(reports.End{ExitCode: 1}); err != nil {
		t.Fatal(err)
	}
	back := mustRead(t, path)
	if back.Incomplete || back.Meta.Schema != reports.Schema {
		t.Fatalf("incomplete %v schema %q", back.Incomplete, back.Meta.Schema)
	}
	if len(back.Scenarios) != len(small.Scenarios) || len(back.Samples) != len(small.Samples) || len(back.Seconds) != len(small.Seconds) ||
		len(back.Events) != len(small.Events) || len(back.ReadyzFailures) != len(small.ReadyzFailures) || len(back.Verdicts) != len(small.Verdicts) {
		t.Errorf("counts differ: %d/%d scenarios %d/%d samples %d/%d seconds %d/%d events %d/%d readyz %d/%d verdicts",
			len(back.Scenarios), len(small.Scenarios), len(back.Samples), len(small.Samples), len(back.Seconds), len(small.Seconds),
			len(back.Events), len(small.Events), len(back.ReadyzFailures), len(small.ReadyzFailures), len(back.Verdicts), len(small.Verdicts))
	}
	if back.Seconds[0].InFlight != small.Seconds[0].InFlight || back.Seconds[0].InFlight == 0 {
		t.Errorf("in_flight %d, want %d", back.Seconds[0].InFlight, small.Seconds[0].InFlight)
	}
}

func mustWrite(t *testing.T, w *reports.Writer, kind string, v any) {
	t.Helper()
	if err := w.Write(kind, v); err != nil {
		t.Fatal(err)
	}
}
