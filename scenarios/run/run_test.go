package run

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/reports"
)

func TestExitCode(t *testing.T) {
	pass := reports.Verdict{Scenario: "a", Passed: true}
	fail := reports.Verdict{Scenario: "b"}
	skip := reports.Verdict{Scenario: "c", Skipped: "no fault actions"}
	up := errors.New("kind create cluster: kubeadm init failed")
	for _, c := range []struct {
		name        string
		vs          []reports.Verdict
		planned     int
		upErr       error
		interrupted bool
		code        int
		reason      string
	}{
		{"every scenario passed", []reports.Verdict{pass, pass}, 2, nil, false, ExitOK, ""},
		{"a skip beside a pass still passes", []reports.Verdict{pass, skip}, 2, nil, false, ExitOK, ""},
		{"a scenario failed", []reports.Verdict{pass, fail}, 2, nil, false, ExitFailed, "a scenario failed"},
		{"fewer verdicts than planned", []reports.Verdict{pass}, 2, nil, false, ExitFailed, "a scenario failed"},
		{"nothing judged", []reports.Verdict{skip, skip}, 2, nil, false, ExitFailed, NothingJudged},
		{"no verdict at all", nil, 1, nil, false, ExitFailed, "a scenario failed"},
		{"the platform did not come up", nil, 2, up, false, ExitInfra, "platform up: kind create cluster: kubeadm init failed"},
		{"an interrupt wins over everything", []reports.Verdict{fail}, 2, up, true, ExitInterrupted, "interrupted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, reason := ExitCode(c.vs, c.planned, c.upErr, c.interrupted)
			if code != c.code || reason != c.reason {
				t.Errorf("ExitCode = %d %q, want %d %q", code, reason, c.code, c.reason)
			}
		})
	}
}

// system records the teardown's calls and whether each had a deadline.
type system struct {
	calls  []string
	budget time.Duration
	dump   error
}

func (s *system) DumpLogs(ctx context.Context, dir string) error {
	dl, _ := ctx.Deadline()
	s.calls = append(s.calls, "logs "+filepath.Base(dir)+" "+time.Until(dl).Round(time.Minute).String())
	return s.dump
}
func (s *system) Down(ctx context.Context) error {
	s.calls = append(s.calls, "down")
	return ctx.Err()
}

type cloudSystem struct{ system }

func (*cloudSystem) TeardownBudget() time.Duration { return 45 * time.Minute }

func TestTeardown(t *testing.T) {
	for _, c := range []struct {
		name  string
		sys   Teardowner
		calls func(Teardowner) []string
		want  string
	}{
		{"logs first, then down, within the default budget", &system{}, func(s Teardowner) []string { return s.(*system).calls },
			"logs logs 2m0s,down"},
		{"a failed dump does not stop down", &system{dump: errors.New("no pods")}, func(s Teardowner) []string { return s.(*system).calls },
			"logs logs 2m0s,down"},
		{"a platform's own budget", &cloudSystem{}, func(s Teardowner) []string { return s.(*cloudSystem).calls },
			"logs logs 45m0s,down"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var steps []string
			err := Teardown(c.sys, "/tmp/x/logs", nil, func(name string, _ time.Time, err error) {
				if err != nil {
					name += "!"
				}
				steps = append(steps, name)
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(c.calls(c.sys), ","); got != c.want {
				t.Errorf("calls %s, want %s", got, c.want)
			}
			if len(steps) != 2 || !strings.HasPrefix(steps[0], "DumpLogs") || steps[1] != "Down" {
				t.Errorf("steps %v", steps)
			}
		})
	}
}

func TestCloseKeepsAnInterruptedRunOpen(t *testing.T) {
	for _, c := range []struct {
		code       int
		incomplete bool
	}{{ExitOK, false}, {ExitFailed, false}, {ExitInterrupted, true}} {
		path := filepath.Join(t.TempDir(), "results.jsonl")
		w, err := reports.Create(path, reports.RunMeta{RunID: "r", Platform: "local", Started: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if err := Close(w, reports.SummaryRow("local", nil), c.code, "why"); err != nil {
			t.Fatal(err)
		}
		res, err := reports.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		if res.Incomplete != c.incomplete || (!c.incomplete && (res.End == nil || res.End.ExitCode != c.code)) {
			t.Errorf("code %d: incomplete %v, end %+v", c.code, res.Incomplete, res.End)
		}
	}
}
