package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
)

var oracleT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func testStepRules(t *testing.T) StepRules {
	t.Helper()
	r, ok := StepRulesOf(consoleclient.AutoscaleConfig{HighFraction: 0.8, MeanUpFraction: 0.5, LowFraction: 0.3,
		TargetRPS: 50, LowRounds: 3, UpCooldownSeconds: 4, DownCooldownSeconds: 6, StartupGraceSeconds: 120})
	if !ok {
		t.Fatal("rules not read")
	}
	return r
}

// wk is a ready worker with in in flight of 32; calls and prev make a rate.
func wk(id string, in int, opts ...func(*consoleclient.StepRoundWorker)) consoleclient.StepRoundWorker {
	w := consoleclient.StepRoundWorker{StepRoundSample: consoleclient.StepRoundSample{ID: id, Reachable: true, Ready: true,
		InFlight: in, Limit: 32, SampledAt: oracleT0}}
	for _, o := range opts {
		o(&w)
	}
	return w
}

func rate(perSecond uint64) func(*consoleclient.StepRoundWorker) {
	return func(w *consoleclient.StepRoundWorker) {
		w.CallsTotal = 1000 + perSecond
		w.Prev = &consoleclient.StepRoundSample{ID: w.ID, Reachable: true, Ready: true, CallsTotal: 1000, SampledAt: oracleT0.Add(-time.Second)}
	}
}

func canary(w *consoleclient.StepRoundWorker)      { w.Canary = true }
func unreachable(w *consoleclient.StepRoundWorker) { w.Reachable, w.Ready = false, false }
func starting(w *consoleclient.StepRoundWorker)    { w.Ready, w.Starting = false, true }

func TestDecideStep(t *testing.T) {
	r := testStepRules(t)
	long := oracleT0.Add(-time.Minute) // every cooldown passed
	for _, c := range []struct {
		name    string
		count   int
		max     int
		last    time.Time
		missing int
		streak  int
		workers []consoleclient.StepRoundWorker
		action  string
		to      int
		rule    string
	}{
		{"mean at 62.5 % steps to the proportional target", 1, 5, long, 0, 0, []consoleclient.StepRoundWorker{wk("a", 20)}, "up", 2, "mean in-flight 62.5 %"},
		{"two high workers: ceil(2 × 0.9375 / 0.5) = 4", 2, 5, long, 0, 0, []consoleclient.StepRoundWorker{wk("a", 30), wk("b", 30)}, "up", 4, "proportional step to 4"},
		{"the max caps the step", 2, 3, long, 0, 0, []consoleclient.StepRoundWorker{wk("a", 30), wk("b", 30)}, "up", 3, "proportional"},
		{"within the up cooldown", 1, 5, oracleT0.Add(-3 * time.Second), 0, 0, []consoleclient.StepRoundWorker{wk("a", 20)}, "hold", 1, "up cooldown"},
		{"at the max under load", 3, 3, long, 0, 0, []consoleclient.StepRoundWorker{wk("a", 30), wk("b", 30), wk("c", 30)}, "hold", 3, "at the max"},
		{"the rate alone: 60 calls/s", 1, 5, long, 0, 0, []consoleclient.StepRoundWorker{wk("a", 0, rate(60))}, "up", 2, "60.0 calls/s"},
		{"exactly at the mean-up fraction", 1, 5, long, 0, 0, []consoleclient.StepRoundWorker{wk("a", 16)}, "up", 2, "50.0 %"},
		{"a canary halves the mean: 10+10 of 64 holds", 1, 5, long, 0, 0, []consoleclient.StepRoundWorker{wk("a", 10), wk("c", 10, canary)}, "hold", 1, "not low"},
		{"with a canary the step is the ceiling less the canary", 1, 5, long, 0, 0, []consoleclient.StepRoundWorker{wk("a", 20), wk("c", 20, canary)}, "up", 2, "1 canaries"},
		{"a high worker while another starts does not trigger", 1, 5, long, 0, 0, []consoleclient.StepRoundWorker{wk("a", 30), wk("b", 0, starting)}, "hold", 1, "starting"},
		{"low for the third round steps down by one", 3, 5, long, 0, 2, []consoleclient.StepRoundWorker{wk("a", 0), wk("b", 1), wk("c", 0)}, "down", 2, "low for 3 rounds"},
		{"low for the second round holds", 3, 5, long, 0, 1, []consoleclient.StepRoundWorker{wk("a", 0), wk("b", 1), wk("c", 0)}, "hold", 3, "2 of 3"},
		{"within the down cooldown", 2, 5, oracleT0.Add(-5 * time.Second), 0, 5, []consoleclient.StepRoundWorker{wk("a", 0), wk("b", 0)}, "hold", 2, "down cooldown"},
		{"an unreachable worker: no scale-in", 2, 5, long, 0, 5, []consoleclient.StepRoundWorker{wk("a", 0), wk("b", 0, unreachable)}, "hold", 2, "down"},
		{"a missing worker within the grace is starting", 2, 5, long, 1, 5, []consoleclient.StepRoundWorker{wk("a", 0)}, "hold", 2, "starting"},
		{"a missing worker past the grace is down", 2, 5, oracleT0.Add(-3 * time.Minute), 1, 5, []consoleclient.StepRoundWorker{wk("a", 0)}, "hold", 2, "down or missing"},
		{"count − 1 could not carry the rate", 2, 5, long, 0, 5, []consoleclient.StepRoundWorker{wk("a", 0, rate(40)), wk("b", 0, rate(40))}, "hold", 2, "80.0 calls/s"},
		{"no ready worker", 2, 5, long, 0, 5, []consoleclient.StepRoundWorker{wk("a", 0, unreachable)}, "hold", 2, "no ready worker"},
		{"at 1 worker no step down", 1, 5, long, 0, 5, []consoleclient.StepRoundWorker{wk("a", 0)}, "hold", 1, "minimum"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rd := consoleclient.StepRound{At: oracleT0, Count: c.count, Max: c.max, LastChange: c.last, Missing: c.missing, Workers: c.workers}
			x := DecideStep(r, rd, c.streak)
			if x.Action != c.action || x.To != c.to || !strings.Contains(x.Rule, c.rule) {
				t.Errorf("DecideStep = %s to %d (%s), want %s to %d with %q", x.Action, x.To, x.Rule, c.action, c.to, c.rule)
			}
		})
	}
}

func TestJudgeStepRounds(t *testing.T) {
	r := testStepRules(t)
	created := oracleT0.Add(-time.Minute)
	entry := func(at time.Time, action string, tags map[string]string) consoleclient.AuditEntry {
		return consoleclient.AuditEntry{At: at, Actor: "scheduler", Action: action, Tags: tags}
	}
	audit := []consoleclient.AuditEntry{entry(created, auditCount, map[string]string{"from": "0", "to": "2"})}
	round := func(k int, in int, streak int, action string, to int) consoleclient.StepRound {
		at := oracleT0.Add(time.Duration(k) * time.Second)
		w := func(id string) consoleclient.StepRoundWorker {
			x := wk(id, in)
			x.SampledAt = at
			if k > 0 {
				x.Prev = &consoleclient.StepRoundSample{ID: id, Reachable: true, Ready: true, SampledAt: at.Add(-time.Second)}
			}
			return x
		}
		return consoleclient.StepRound{At: at, Count: 2, Max: 5, LastChange: created, LowStreak: streak,
			Workers: []consoleclient.StepRoundWorker{w("a"), w("b")}, Action: action, From: 2, To: to}
	}
	clean := []consoleclient.StepRound{round(0, 0, 0, "hold", 2), round(1, 0, 1, "hold", 2), round(2, 0, 2, "down", 1)}
	down := append(audit, entry(clean[2].At, auditAutoscale, map[string]string{"action": "down", "from": "2", "to": "1"}))
	// A count set by hand a fraction of a millisecond from a round: after
	// it (the PUT waited on the round), or before it (the round read it).
	byHand := func(at time.Time) consoleclient.AuditEntry {
		e := entry(at, auditCount, map[string]string{"from": "2", "to": "2"})
		e.Actor = "admin"
		return e
	}
	clock := func(rd consoleclient.StepRound, at time.Time) consoleclient.StepRound { rd.LastChange = at; return rd }
	justAfter, justBefore := clean[1].At.Add(300*time.Microsecond), clean[1].At.Add(-300*time.Microsecond)
	for _, c := range []struct {
		name   string
		rounds []consoleclient.StepRound
		audit  []consoleclient.AuditEntry
		fail   string // the fact that fails; "" none
	}{
		{"a clean low streak and its step down", clean, down, ""},
		{"a step down on the second low round", []consoleclient.StepRound{clean[0], round(1, 0, 1, "down", 1)},
			append(audit, entry(oracleT0.Add(time.Second), auditAutoscale, map[string]string{"action": "down", "from": "2", "to": "1"})), FactStepRoundsDecided},
		{"an audited step no round decided", clean[:2], append(audit, entry(oracleT0.Add(1500*time.Millisecond), auditAutoscale,
			map[string]string{"action": "down", "from": "2", "to": "1"})), FactStepRoundsAudited},
		{"a count set by hand just after a round resets the streak from the next", []consoleclient.StepRound{clean[0], clean[1],
			clock(round(2, 0, 0, "hold", 2), justAfter), clock(round(3, 0, 1, "hold", 2), justAfter)}, append(audit, byHand(justAfter)), ""},
		{"a count set by hand just before a round resets the streak it reads", []consoleclient.StepRound{clean[0],
			clock(round(1, 0, 0, "hold", 2), justBefore), clock(round(2, 0, 1, "hold", 2), justBefore)}, append(audit, byHand(justBefore)), ""},
		{"a count set by hand the round did not see", []consoleclient.StepRound{clean[0], clean[1], round(2, 0, 2, "hold", 2)},
			append(audit, byHand(justAfter)), FactStepRoundsInputs},
		{"a low streak carried over a busy round", []consoleclient.StepRound{clean[0], round(1, 20, 1, "up", 3), round(2, 0, 1, "hold", 2)},
			audit, FactStepRoundsInputs},
	} {
		t.Run(c.name, func(t *testing.T) {
			var failed []string
			for _, f := range JudgeStepRounds(r, c.rounds, nil, c.audit, oracleT0) {
				if !f.Passed {
					failed = append(failed, f.Name)
				}
			}
			if (c.fail == "") != (len(failed) == 0) || (c.fail != "" && failed[0] != c.fail) {
				t.Errorf("failed facts %q, want %q", failed, c.fail)
			}
		})
	}
}
