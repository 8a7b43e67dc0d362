package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/internal/proctest"
	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/observe"
	"github.com/scaleproof/scaleproof/scenarios/platform/local"
)

// TestConsoleKilledUnderLoad is issue 6's "console restart under load", run
// as a scenario through the harness (scenarios.Env) so that its verdict is
// the one a run would print. The zone runs at 3 under 16 VUs; the console is
// killed (SIGKILL) and started again on the same state file. Checked:
//
//   - max, count, the last change time and the audit are all there after the
//     restart, and the scheduler config too;
//   - the cooldown survives: the restarted console, seeing every worker low,
//     holds with "down cooldown: N s left" counted from the persisted last
//     change (a lost last change would step down at once);
//   - the workers kept serving through the edge: no 5xx, no transport error,
//     calls ok in every second of the gap;
//   - the harness's /readyz poller recorded the gap (failed polls between
//     the kill and the restart, in the results file too), and the scenario's
//     verdict fails on it, on that fact alone.
func TestConsoleKilledUnderLoad(t *testing.T) {
	t.Parallel()
	const downCooldown = 60 * time.Second
	r := upLocal(t, func(c *local.Config) { c.DownCooldown = downCooldown })

	prof := scenarios.Quick()
	prof.VUs, prof.WorkMS, prof.Max = 16, 200, 3
	prof.SchedulerInterval = 500 * time.Millisecond
	prof.SampleInterval = 250 * time.Millisecond
	prof.ReadyzInterval, prof.ReadyzTimeout = 200*time.Millisecond, time.Second
	prof.GracefulStop = 3 * time.Second
	resultsPath := filepath.Join(r.work, "results.jsonl")
	w, err := reports.Create(resultsPath, reports.RunMeta{RunID: "restart", Platform: "local", Profile: "test", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	readyzFailed := make(chan struct{}, 1024)
	log := slog.New(&notifyHandler{Handler: slog.NewTextHandler(io.Discard, nil),
		msg: "console /readyz failed", ch: readyzFailed})
	env := scenarios.NewEnv(r.ep, prof, w, log)

	var killed, back, scStart time.Time
	sc := scenarios.Scenario{
		Name:  "console-restart",
		Title: "the console killed and restarted under load",
		Run: func(ctx context.Context, e *scenarios.Env, s *scenarios.Scope) error {
			g, admin := e.Endpoints.Group, e.Endpoints.Keys.GroupAdmin.Key
			scStart = s.Start
			if err := s.CreateZone(ctx, 3); err != nil {
				return err
			}
			three := 3
			if st, err := e.Console.PutZone(ctx, admin, g, s.Zone, consoleclient.Update{Count: &three}); err != nil || st != http.StatusOK {
				return fmt.Errorf("PUT count 3: HTTP %d %v", st, err)
			}
			if _, err := s.WaitFor(ctx, "3 ready workers", 30*time.Second, func(x observe.Sample) bool { return x.Ready == 3 }); err != nil {
				return err
			}
			l := s.Load(ctx, 2*time.Minute)
			defer func() { l.Stop(); l.Wait() }()
			// Kill it once 6 s of the cooldown have run, so that a restarted
			// console that restarted the cooldown would be told apart.
			low, err := s.WaitFor(ctx, "a hold with 54 s or less of the down cooldown left", 30*time.Second, func(x observe.Sample) bool {
				left, ok := cooldownLeft(x.Decision)
				return ok && left <= downCooldown-6*time.Second
			})
			if err != nil {
				return err
			}
			before, beforeAudit, err := readState(ctx, e, s.Zone)
			if err != nil {
				return err
			}

			// kill -9, as the OOM killer would; the poller must see the
			// console gone (5 failed polls, a second) before it comes back.
			pid, err := r.consolePID()
			if err != nil {
				return err
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				return fmt.Errorf("kill -9 the console: %w", err)
			}
			killed = time.Now()
			for i := range 5 {
				select {
				case <-readyzFailed:
				case <-time.After(10 * time.Second):
					return fmt.Errorf("waited 10s for failed /readyz poll %d after killing the console", i+1)
				}
			}
			u, err := r.l.RestartConsole(ctx, true)
			if err != nil {
				return fmt.Errorf("restart the console: %w", err)
			}
			back = time.Now()
			s.Check("the console came back on its address", u == e.Endpoints.ConsoleURL, "%s, was %s", u, e.Endpoints.ConsoleURL)

			after, afterAudit, err := readState(ctx, e, s.Zone)
			if err != nil {
				return err
			}
			s.Check("count and max survive", after.Count == before.Count && *after.MaxCount == *before.MaxCount,
				"count %d max %d, before %d %d", after.Count, *after.MaxCount, before.Count, *before.MaxCount)
			// The scheduler's rounds go on between the read above and the
			// kill (every 500 ms), so the decision that survives is the one
			// read, or a later one the killed console made and stored before
			// it died; never none or an older one. (The state is read as soon
			// as the restarted console is ready, before its scheduler's first
			// tick an interval later, so no round of its own has replaced it.)
			surv := after.LastDecision
			s.Check("last decision survives", surv != nil && before.LastDecision != nil &&
				((surv.At.Equal(before.LastDecision.At) && surv.Reason == before.LastDecision.Reason) ||
					(surv.At.After(before.LastDecision.At) && surv.At.Before(killed))),
				"%+v, before %+v, killed at %s", surv, before.LastDecision, killed.Format(time.StampMilli))
			s.Check("audit survives", len(afterAudit) >= len(beforeAudit) && slices.EqualFunc(beforeAudit, afterAudit[:len(beforeAudit)],
				func(a, b consoleclient.AuditEntry) bool {
					return a.ID == b.ID && a.Action == b.Action && a.At.Equal(b.At)
				}),
				"%d entries, %d before", len(afterAudit), len(beforeAudit))
			var ar consoleclient.Autorebalance
			st, err := r.getJSON(ctx, e.Endpoints.ConsoleURL+"/api/v1/config/autorebalance", e.Endpoints.Keys.SuperAdmin.Key, &ar)
			s.Check("scheduler config survives", err == nil && st == http.StatusOK && ar.Enabled && ar.IntervalSeconds == prof.SchedulerInterval.Seconds(),
				"HTTP %d %+v %v", st, ar, err)

			// The restarted console sees every worker low again after 3
			// rounds; the cooldown it then reports runs from the persisted
			// last change.
			var full struct {
				LastChange time.Time `json:"last_change"`
			}
			st, err = r.getJSON(ctx, e.Endpoints.ConsoleURL+"/api/v1/groups/"+g+"/zones/"+s.Zone+"/workers", admin, &full)
			if err != nil || st != http.StatusOK {
				return fmt.Errorf("GET zone: HTTP %d %v", st, err)
			}
			lastChange := full.LastChange
			hold, err := s.WaitFor(ctx, "the restarted console's hold in the down cooldown", 30*time.Second, func(x observe.Sample) bool {
				_, ok := cooldownLeft(x.Decision)
				return ok && x.Decision != low.Decision
			})
			if err != nil {
				return err
			}
			// The reason rounds up to whole seconds and was decided up to a
			// round before the sample.
			left, _ := cooldownLeft(hold.Decision)
			want := lastChange.Add(downCooldown).Sub(hold.At)
			s.Check("down cooldown runs from the persisted last change", !lastChange.IsZero() && left-want >= -time.Second && left-want <= 3*time.Second,
				"%q at %s: %s left, want about %s (last change %s)", hold.Decision, hold.At.Format(time.TimeOnly), left, want.Round(time.Second), lastChange.Format(time.TimeOnly))
			bad := 0
			for _, x := range s.Samples() {
				if x.Err == "" && !x.At.Before(low.At) && x.Count != 3 {
					bad++
				}
			}
			s.Check("count stays 3", bad == 0, "%d samples with another count", bad)
			return nil
		},
	}
	ctx := ctxFor(t, 3*time.Minute)
	vs := env.Run(ctx, []scenarios.Scenario{sc})
	if err := w.Close(reports.End{Ended: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 {
		t.Fatalf("%d verdicts", len(vs))
	}
	v := vs[0]
	if v.Error != "" {
		t.Fatalf("scenario error: %s", v.Error)
	}
	var failedFacts []string
	for _, f := range v.Facts {
		if !f.Passed {
			failedFacts = append(failedFacts, f.Name)
			if f.Name != "console /readyz stayed 200" {
				t.Errorf("fact failed: %s: %s", f.Name, f.Detail)
			}
		} else {
			t.Logf("fact: %s: %s", f.Name, f.Detail)
		}
	}
	if v.Passed || !slices.Equal(failedFacts, []string{"console /readyz stayed 200"}) {
		t.Errorf("verdict passed=%v, failed facts %q: want a failure on /readyz alone", v.Passed, failedFacts)
	}
	if v.Calls.Server5xx != 0 || v.Calls.Transport != 0 || v.Calls.BadResponse != 0 || v.Calls.OK == 0 {
		t.Errorf("calls %+v: the workers must keep serving through the edge while the console is down", v.Calls)
	}

	res, err := reports.Read(resultsPath)
	if err != nil {
		t.Fatal(err)
	}
	var gap []observe.ReadyzFailure
	for _, raw := range res.Readyz {
		var f observe.ReadyzFailure
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
		gap = append(gap, f)
		if f.At.Before(killed) || f.At.After(back.Add(prof.ReadyzInterval+prof.ReadyzTimeout)) {
			t.Errorf("/readyz failure at %s outside the restart [%s, %s]", f.At.Format(time.StampMilli), killed.Format(time.StampMilli), back.Format(time.StampMilli))
		}
	}
	if len(gap) == 0 {
		t.Fatal("the /readyz gap was not recorded")
	}
	// Calls were served in every second the console was down.
	var gapSeconds []string
	for _, sec := range res.Seconds {
		secStart := scStart.Add(time.Duration(sec.T) * time.Second)
		if secStart.Add(time.Second).Before(killed) || secStart.After(back) {
			continue
		}
		gapSeconds = append(gapSeconds, fmt.Sprintf("t=%d ok=%d", sec.T, sec.Calls.OK))
		if sec.Calls.OK == 0 {
			t.Errorf("second %d (console down): no call served", sec.T)
		}
	}
	t.Logf("console down %.2fs: %d failed /readyz polls from %s to %s; calls %+v; seconds of the gap: %v",
		back.Sub(killed).Seconds(), len(gap), gap[0].At.Format(time.StampMilli), gap[len(gap)-1].At.Format(time.StampMilli), v.Calls, gapSeconds)
}

// notifyHandler signals ch (without blocking) for each record whose message is msg.
type notifyHandler struct {
	slog.Handler
	msg string
	ch  chan struct{}
}

func (h *notifyHandler) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Message == h.msg {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return h.Handler.Handle(ctx, rec)
}

func (h *notifyHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &notifyHandler{Handler: h.Handler.WithAttrs(as), msg: h.msg, ch: h.ch}
}

func (h *notifyHandler) WithGroup(g string) slog.Handler {
	return &notifyHandler{Handler: h.Handler.WithGroup(g), msg: h.msg, ch: h.ch}
}

// consolePID finds the console process of this platform in /proc.
func (r *rig) consolePID() (int, error) {
	for _, pid := range proctest.Of(refBin, r.work) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.Contains(string(b), "\x00console\x00") {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no console process under %s", r.work)
}

// getJSON GETs url with key and decodes a 200 answer into out.
func (r *rig) getJSON(ctx context.Context, url, key string, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := r.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(out)
}

var cooldownRE = regexp.MustCompile(`down cooldown: (\d+)s left`)

// cooldownLeft reads "down cooldown: Ns left" from a sample's decision.
func cooldownLeft(decision string) (time.Duration, bool) {
	m := cooldownRE.FindStringSubmatch(decision)
	if m == nil {
		return 0, false
	}
	n, _ := strconv.Atoi(m[1])
	return time.Duration(n) * time.Second, true
}

func readState(ctx context.Context, e *scenarios.Env, zone string) (consoleclient.Zone, []consoleclient.AuditEntry, error) {
	z, st, err := e.Console.GetZone(ctx, e.Endpoints.Keys.SuperAdmin.Key, e.Endpoints.Group, zone)
	if err != nil || st != http.StatusOK || z.MaxCount == nil {
		return z, nil, fmt.Errorf("GET zone %s: HTTP %d %v", zone, st, err)
	}
	es, st, err := e.Console.Audit(ctx, e.Endpoints.Keys.SuperAdmin.Key, e.Endpoints.Group, zone)
	if err != nil || st != http.StatusOK {
		return z, nil, fmt.Errorf("audit %s: HTTP %d %v", zone, st, err)
	}
	slices.SortFunc(es, func(a, b consoleclient.AuditEntry) int { return int(a.ID) - int(b.ID) })
	return z, es, nil
}
