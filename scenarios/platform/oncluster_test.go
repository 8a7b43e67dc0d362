package platform

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/internal/steps"
)

// fakeMaker is a cluster maker; calls records what was called, in order.
type fakeMaker struct {
	calls  *[]string
	keep   bool
	budget time.Duration
	upErr  error
	rec    steps.Recorder
	up     bool
}

func (m *fakeMaker) Name() string { return "kind" }
func (m *fakeMaker) Up(context.Context) (string, error) {
	*m.calls = append(*m.calls, "maker up")
	m.up = m.upErr == nil
	return "kubeconfig-path", m.upErr
}
func (m *fakeMaker) Down(context.Context) error {
	*m.calls = append(*m.calls, "maker down")
	m.up = false
	return nil
}
func (m *fakeMaker) IsUp(context.Context) (bool, error) { return m.up, nil }
func (m *fakeMaker) DumpLogs(context.Context, string) error {
	*m.calls = append(*m.calls, "maker logs")
	return nil
}
func (m *fakeMaker) SystemDown() (bool, time.Duration) { return m.keep, m.budget }
func (m *fakeMaker) Steps() *steps.Recorder            { return &m.rec }

// fakeSystem is the deployed system; its Down records whether it had a
// deadline.
type fakeSystem struct{ calls *[]string }

func (s fakeSystem) Name() string { return "kubeconfig" }
func (s fakeSystem) Up(context.Context) (Endpoints, error) {
	*s.calls = append(*s.calls, "system up")
	return Endpoints{ConsoleURL: "http://127.0.0.1:1", EdgeURL: "http://127.0.0.1:2"}, nil
}
func (s fakeSystem) Down(ctx context.Context) error {
	if _, ok := ctx.Deadline(); ok {
		*s.calls = append(*s.calls, "system down (bounded)")
	} else {
		*s.calls = append(*s.calls, "system down")
	}
	return nil
}
func (s fakeSystem) IsUp(context.Context) (bool, error) { return true, nil }
func (s fakeSystem) DumpLogs(context.Context, string) error {
	*s.calls = append(*s.calls, "system logs")
	return nil
}

func TestOnCluster(t *testing.T) {
	for _, c := range []struct {
		name    string
		keep    bool
		budget  time.Duration
		logsDir string
		dump    bool // the lifecycle dumps the logs before Down
		want    string
		steps   string
	}{
		{"kind: logs, then the system cut short, then the cluster", false, 5 * time.Second, "", true,
			"maker up,system up,system logs,maker logs,system down (bounded),maker down", "deploy"},
		{"--keep: the system stays on the kept cluster", true, 5 * time.Second, "", true,
			"maker up,system up,system logs,maker logs,maker down", "deploy"},
		{"an adopted cluster: the system's Down waited for, as a step", false, 0, "", true,
			"maker up,system up,system logs,maker logs,system down,maker down", "deploy,down deployed system"},
		{"a cloud: Down dumps the logs first when the run did not", false, 10 * time.Second, "logs", false,
			"maker up,system up,system logs,maker logs,system down (bounded),maker down", "deploy"},
		{"no logs folder: Down does not dump", false, 10 * time.Second, "", false,
			"maker up,system up,system down (bounded),maker down", "deploy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			var calls []string
			m := &fakeMaker{calls: &calls, keep: c.keep, budget: c.budget}
			var handed string
			o := NewOnCluster[string](m, func(_ context.Context, h string) (Platform, error) {
				handed = h
				return fakeSystem{calls: &calls}, nil
			}, OnClusterOptions{LogsDir: c.logsDir})
			ep, err := o.Up(ctx)
			if err != nil || ep.EdgeURL == "" || handed != "kubeconfig-path" {
				t.Fatalf("Up: %+v %v, handed %q", ep, err, handed)
			}
			if up, _ := o.IsUp(ctx); !up {
				t.Error("IsUp false after Up")
			}
			if c.dump {
				if err := o.DumpLogs(ctx, "dir"); err != nil {
					t.Fatal(err)
				}
			}
			for range 2 {
				if err := o.Down(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if got := strings.Join(calls, ","); got != c.want {
				t.Errorf("calls\n %s\nwant\n %s", got, c.want)
			}
			var names []string
			for _, s := range o.Steps() {
				names = append(names, s.Name)
			}
			if got := strings.Join(names, ","); got != c.steps {
				t.Errorf("steps %s, want %s", got, c.steps)
			}
			if up, _ := o.IsUp(ctx); up {
				t.Error("IsUp true after Down")
			}
			if o.StepPrefix() != "kind: " {
				t.Errorf("step prefix %q", o.StepPrefix())
			}
		})
	}
}

func TestOnClusterFailedUp(t *testing.T) {
	ctx := context.Background()
	var calls []string
	m := &fakeMaker{calls: &calls, budget: time.Second, upErr: errors.New("kubeadm init failed")}
	o := NewOnCluster[string](m, func(context.Context, string) (Platform, error) {
		t.Fatal("deployed onto a cluster that failed")
		return nil, nil
	}, OnClusterOptions{LogsDir: "logs"})
	if _, err := o.Up(ctx); err == nil || !strings.Contains(err.Error(), "kubeadm init failed") {
		t.Fatalf("err %v", err)
	}
	if _, err := o.RunLoadShards(ctx, ShardJob{}); !errors.Is(err, errNotDeployed) {
		t.Errorf("RunLoadShards before the system is deployed: %v, want errNotDeployed", err)
	}
	if _, err := o.ShardEdgeURL(ctx); !errors.Is(err, errNotDeployed) {
		t.Errorf("ShardEdgeURL before the system is deployed: %v, want errNotDeployed", err)
	}
	if err := o.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(calls, ","); got != "maker up,maker down" {
		t.Errorf("calls %s: a half-made cluster is still deleted, nothing else runs", got)
	}

	// a deploy step that returns no platform fails Up
	calls = nil
	m = &fakeMaker{calls: &calls, budget: time.Second}
	o = NewOnCluster[string](m, func(context.Context, string) (Platform, error) { return nil, nil }, OnClusterOptions{})
	if _, err := o.Up(ctx); err == nil || !strings.Contains(err.Error(), "no platform") {
		t.Fatalf("nil platform: %v", err)
	}
	if s := o.Steps(); len(s) != 1 || s[0].Name != "deploy" || s[0].Err == nil {
		t.Errorf("steps %+v, want a failed deploy", s)
	}
}

// restartOnly is a deployed system offering only the console's restart.
type restartOnly struct {
	fakeSystem
	restarts *int
}

func (r restartOnly) Offers(action string) error {
	if action == RestartAction(PartConsole) {
		return nil
	}
	return &NotOfferedError{Platform: "kind", Action: action, Reason: "only the console"}
}
func (r restartOnly) Restart(context.Context, Part) error { *r.restarts++; return nil }
func (r restartOnly) Workers(context.Context, string, string) ([]Worker, error) {
	return nil, r.Offers("list a zone's workers")
}
func (r restartOnly) Freeze(context.Context, string, string, string) error { return r.Offers("freeze") }
func (r restartOnly) Thaw(context.Context, string, string, string) error   { return r.Offers("thaw") }
func (r restartOnly) Kill(context.Context, string, string, string) error   { return r.Offers("kill") }
func (r restartOnly) FailReadiness(context.Context, string, string, string) (Readiness, error) {
	return Readiness{}, r.Offers("fail readiness")
}
func (r restartOnly) PassReadiness(context.Context, string, string, string) error {
	return r.Offers("pass readiness")
}

// TestOnClusterFaults: the fault actions are the deployed platform's: none
// before the deploy, none when it offers none, and what it offers after.
func TestOnClusterFaults(t *testing.T) {
	ctx := context.Background()
	restartAction := RestartAction(PartConsole)
	for _, c := range []struct {
		name        string
		system      func(calls *[]string, restarts *int) Platform
		up          bool
		wantRestart bool // Offers and Restart succeed
		wantReason  string
	}{
		{"before the deploy", func(c *[]string, _ *int) Platform { return fakeSystem{calls: c} }, false, false, "not deployed yet"},
		{"a deployed system with no fault actions", func(c *[]string, _ *int) Platform { return fakeSystem{calls: c} }, true, false, "offers no fault actions"},
		{"a deployed system offering the restart", func(c *[]string, r *int) Platform { return restartOnly{fakeSystem{calls: c}, r} }, true, true, "only the console"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls []string
			restarts := 0
			o := NewOnCluster[string](&fakeMaker{calls: &calls}, func(context.Context, string) (Platform, error) {
				return c.system(&calls, &restarts), nil
			}, OnClusterOptions{})
			if c.up {
				if _, err := o.Up(ctx); err != nil {
					t.Fatal(err)
				}
			}
			f := FaulterOf(o, "")
			err := o.Offers(restartAction)
			rerr := f.Restart(ctx, PartConsole)
			if c.wantRestart != (err == nil) || c.wantRestart != (rerr == nil) || c.wantRestart != (restarts == 1) {
				t.Fatalf("Offers %v, Restart %v, restarts %d; want offered %v", err, rerr, restarts, c.wantRestart)
			}
			ferr := o.Offers("freeze a worker")
			_, werr := f.Workers(ctx, "g", "z")
			if !errors.Is(ferr, ErrNotOffered) || !errors.Is(werr, ErrNotOffered) || !strings.Contains(ferr.Error(), c.wantReason) {
				t.Fatalf("freeze offered: %v; workers: %v; want not offered, %q", ferr, werr, c.wantReason)
			}
		})
	}
}
