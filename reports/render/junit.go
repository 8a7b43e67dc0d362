package render

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/reports"
)

// The JUnit XML shape CI systems read (Jenkins, GitLab, Prow's spyglass):
// testsuites > testsuite > testcase with failure, error or skipped.

// JUnitSuites is the document root.
type JUnitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []JUnitSuite `xml:"testsuite"`
}

// JUnitSuite is one results file (or one run's steps).
type JUnitSuite struct {
	Name       string           `xml:"name,attr"`
	Tests      int              `xml:"tests,attr"`
	Failures   int              `xml:"failures,attr"`
	Errors     int              `xml:"errors,attr"`
	Skipped    int              `xml:"skipped,attr"`
	Time       string           `xml:"time,attr"`
	Timestamp  string           `xml:"timestamp,attr,omitempty"`
	Properties *JUnitProperties `xml:"properties,omitempty"`
	Cases      []JUnitCase      `xml:"testcase"`
}

// JUnitProperties are a suite's name/value pairs (run metadata, settings).
type JUnitProperties struct {
	Property []JUnitProperty `xml:"property"`
}

// JUnitProperty is a name/value pair of a suite.
type JUnitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// JUnitCase is one scenario, one checked fact, or one step.
type JUnitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *JUnitProblem `xml:"failure,omitempty"`
	Error     *JUnitProblem `xml:"error,omitempty"`
	Skipped   *JUnitProblem `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// JUnitProblem is a failure, an error or a skip: a one-line message and
// the details.
type JUnitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

func junitSecs(s float64) string {
	if s < 0 {
		s = 0
	}
	return strconv.FormatFloat(s, 'f', 3, 64)
}

func (s *JUnitSuite) add(c JUnitCase) {
	s.Cases = append(s.Cases, c)
	s.Tests++
	switch {
	case c.Failure != nil:
		s.Failures++
	case c.Error != nil:
		s.Errors++
	case c.Skipped != nil:
		s.Skipped++
	}
}

// BuildJUnit builds the JUnit document of runs: one suite per results file;
// in it one testcase per scenario (failed when the scenario failed, an error
// when it has no verdict or could not finish), one per checked fact
// ("scenario / fact"), and a "run complete" case that fails when the file is
// incomplete. Times are seconds; a suite's timestamp is the run's start.
func BuildJUnit(runs []*reports.Results) JUnitSuites {
	doc := JUnitSuites{Name: "scaleproof"}
	total := 0.0
	for _, res := range runs {
		class := "scaleproof." + junitName(res.Meta.Platform)
		props := &JUnitProperties{Property: []JUnitProperty{
			{"source", res.Path}, {"run_id", res.Meta.RunID}, {"platform", res.Meta.Platform}, {"profile", res.Meta.Profile},
			{"version", res.Meta.Version}, {"commit", res.Meta.Commit}, {"policy", res.Meta.Policy},
		}}
		for _, kv := range sortedSettings(res.Meta.Settings) {
			k, v, _ := strings.Cut(kv, "=")
			props.Property = append(props.Property, JUnitProperty{"setting." + k, v})
		}
		suite := JUnitSuite{Name: "scaleproof " + res.RunTitle(), Properties: props}
		if !res.Meta.Started.IsZero() {
			suite.Timestamp = res.Meta.Started.UTC().Format(time.RFC3339)
		}
		runSecs := 0.0
		for _, v := range res.Views() {
			cls := class + "." + junitName(v.Name)
			c := JUnitCase{Name: v.Name, Classname: cls, Time: junitSecs(v.DurationS())}
			runSecs += v.DurationS()
			switch x := v.Verdict; {
			case x == nil:
				c.Error = &JUnitProblem{Message: "no verdict: the run stopped during this scenario", Type: "incomplete"}
			case x.Skipped != "":
				c.Skipped = &JUnitProblem{Message: oneLine(x.Skipped), Type: "skipped"}
			case x.Error != "":
				c.Error = &JUnitProblem{Message: oneLine(x.Error), Type: "scenario", Body: failedFacts(x)}
			case !x.Passed:
				c.Failure = &JUnitProblem{Message: "scenario failed", Type: "scenario", Body: failedFacts(x)}
			}
			if x := v.Verdict; x != nil {
				c.SystemOut = fmt.Sprintf("calls ok %d, 429 %d, 5xx %d, other %d; up to max %s, all ready %s, back to 1 %s, peak %d, p95 %s",
					x.Calls.OK, x.Calls.TooMany, x.Calls.Server5xx, x.Calls.Others(), fmtS(orNever(x.UpToMaxS)),
					fmtS(orNever(x.ReadyMaxS)), fmtS(orNever(x.BackTo1S)), x.PeakCount, fmtMS(x.P95ms))
			}
			suite.add(c)
			if v.Verdict == nil {
				continue
			}
			for _, f := range v.Verdict.Facts {
				fc := JUnitCase{Name: v.Name + " / " + f.Name, Classname: cls, Time: junitSecs(0), SystemOut: f.Detail}
				if f.Contract != "" {
					fc.SystemOut = "contract: " + f.Contract + "\n" + f.Detail
				}
				switch {
				case f.NotApplicable != "":
					// Not promised by the target: not judged, never a pass.
					fc.Skipped = &JUnitProblem{Message: oneLine("not applicable: " + f.NotApplicable), Type: "not-applicable"}
				case v.Verdict.Skipped != "":
					// A skipped scenario judged nothing: its facts are no passes.
					fc.Skipped = &JUnitProblem{Message: "the scenario was skipped", Type: "skipped"}
				case !f.Passed:
					fc.Failure = &JUnitProblem{Message: oneLine(f.Name + ": " + f.Detail), Type: "fact", Body: f.Detail}
				}
				suite.add(fc)
			}
		}
		done := JUnitCase{Name: "run complete", Classname: class, Time: junitSecs(0)}
		if res.Incomplete {
			done.Failure = &JUnitProblem{Message: "results incomplete: " + res.IncompleteReason, Type: "incomplete"}
		} else if res.End != nil && res.End.Reason != "" {
			done.SystemOut = fmt.Sprintf("exit code %d: %s", res.End.ExitCode, res.End.Reason)
		}
		suite.add(done)
		suite.Time = junitSecs(runSecs)
		total += runSecs
		doc.Tests += suite.Tests
		doc.Failures += suite.Failures
		doc.Errors += suite.Errors
		doc.Suites = append(doc.Suites, suite)
	}
	doc.Time = junitSecs(total)
	return doc
}

func failedFacts(v *reports.Verdict) string {
	var b strings.Builder
	for _, f := range v.Facts {
		if f.Failed() {
			fmt.Fprintf(&b, "%s: %s%s\n", f.Name, f.Detail, contractNote(f))
		}
	}
	return b.String()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:299] + "…"
	}
	return s
}

// junitName makes a name safe as a dotted classname part.
func junitName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '.' || r == ' ' || r == '/' {
			return '_'
		}
		return r
	}, s)
	if s == "" {
		return "unnamed"
	}
	return s
}

// WriteJUnit writes doc as indented XML with its header.
func WriteJUnit(w io.Writer, doc JUnitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// RenderJUnit writes the JUnit XML of runs (see BuildJUnit).
func RenderJUnit(w io.Writer, runs []*reports.Results, _ Options) error {
	return WriteJUnit(w, BuildJUnit(runs))
}

// Step is one step of a run as kubetest2 records them (Up, each scenario,
// DumpLogs, Down): its name, how long it took, and its error (nil: passed).
type Step struct {
	Name     string
	Duration time.Duration
	Err      error
	Skipped  string // why the step did not run ("" when it ran)
}

// StepsJUnit builds the JUnit document of a run's steps: one suite named
// suite, one testcase per step, failed when its Err is set.
func StepsJUnit(suite string, started time.Time, steps []Step) JUnitSuites {
	s := JUnitSuite{Name: suite}
	if !started.IsZero() {
		s.Timestamp = started.UTC().Format(time.RFC3339)
	}
	total := 0.0
	for _, st := range steps {
		c := JUnitCase{Name: st.Name, Classname: suite, Time: junitSecs(st.Duration.Seconds())}
		switch {
		case st.Skipped != "":
			c.Skipped = &JUnitProblem{Message: st.Skipped}
		case st.Err != nil:
			c.Failure = &JUnitProblem{Message: oneLine(st.Err.Error()), Type: "step", Body: st.Err.Error()}
		}
		total += st.Duration.Seconds()
		s.add(c)
	}
	s.Time = junitSecs(total)
	return JUnitSuites{Name: suite, Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Time: s.Time, Suites: []JUnitSuite{s}}
}
