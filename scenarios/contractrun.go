package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// contractSettings reads the settings the contract facts depend on from the
// target's own configuration (GET /api/v1/config/autoscale, and the
// scheduler's interval from GET /api/v1/config/autorebalance) when the
// console exposes it, else from the run's profile; Source says which. The
// in-flight limit always comes from the profile (the console API does not
// show the workers' /metrics).
func (e *Env) contractSettings(ctx context.Context) ContractSettings {
	p := e.Profile
	cs := ContractSettings{UpCooldown: p.UpCooldown, DownCooldown: p.DownCooldown, Interval: p.SchedulerInterval,
		LowRounds: 3, MeanUpFraction: 0.5, TargetRPS: p.TargetRPS, MaxInflight: p.MaxInflight,
		Slack: max(p.SampleInterval, time.Second)}
	key := e.Endpoints.Keys.SuperAdmin.Key
	ac, st, err := e.Console.GetAutoscaleConfig(ctx, key)
	if err == nil && st == http.StatusOK && ac.LowRounds > 0 && ac.MeanUpFraction > 0 && ac.TargetRPS > 0 {
		cs.UpCooldown = secondsDur(ac.UpCooldownSeconds)
		cs.DownCooldown = secondsDur(ac.DownCooldownSeconds)
		cs.LowRounds, cs.MeanUpFraction, cs.TargetRPS = ac.LowRounds, ac.MeanUpFraction, ac.TargetRPS
		if ac.LowFraction > 0 && ac.LowFraction < 1 {
			cs.LowFraction = ac.LowFraction
		}
		if ac.IntervalSeconds > 0 {
			cs.Interval = secondsDur(ac.IntervalSeconds)
		}
		cs.Source = fmt.Sprintf("the console's GET /api/v1/config/autoscale; in-flight limit %d from the profile %s", p.MaxInflight, p.Name)
		return cs
	}
	cs.Source = fmt.Sprintf("the profile %s (the console's GET /api/v1/config/autoscale: %s)", p.Name, httpDetail(st, err))
	if ar, st, err := e.Console.GetAutorebalance(ctx, key); err == nil && st == http.StatusOK && ar.IntervalSeconds > 0 {
		cs.Interval = secondsDur(ar.IntervalSeconds)
		cs.Source += "; interval from GET /api/v1/config/autorebalance"
	}
	return cs
}

// zoneSettings are the step policy's settings the console's zones are
// judged on (ZoneContracts): the run's contract settings and the profile's
// max; ok is false until Run has read them (Interval 0).
func (e *Env) zoneSettings() (s target.ConsoleSettings, ok bool) {
	cs := e.contract
	return target.ConsoleSettings{UpCooldown: cs.UpCooldown, DownCooldown: cs.DownCooldown, Interval: cs.Interval,
		LowRounds: cs.LowRounds, Max: e.Profile.Max}, cs.Interval != 0
}

func secondsDur(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// judgeContract adds the contract facts (contract.go) for the scenario's
// zone: its audit trail, its samples and loads. Zones on the hpa policy
// follow upstream HPA's rules, not the step policy's: only the audit facts
// apply to them.
func (s *Scope) judgeContract(ctx context.Context, end time.Time) {
	e := s.env
	if s.sampler == nil {
		return
	}
	// A console that is briefly away (a restart the scenario made, a slow
	// answer on a loaded machine) gets three tries, 1 s apart, within ctx.
	entries, st, err := e.Console.Audit(ctx, e.Endpoints.Keys.SuperAdmin.Key, e.Endpoints.Group, s.Zone)
	for try := 1; try < 3 && (err != nil || st != http.StatusOK) && ctx.Err() == nil; try++ {
		_ = systemClock{}.Sleep(ctx, time.Second) // a ctx that ends ends the tries
		entries, st, err = e.Console.Audit(ctx, e.Endpoints.Keys.SuperAdmin.Key, e.Endpoints.Group, s.Zone)
	}
	if !s.Check("the zone's audit trail is readable", err == nil && st == http.StatusOK, "%s, %d entries", httpDetail(st, err), len(entries)) {
		return
	}
	samples := s.Samples() // before s.mu: Samples takes it on a target
	s.mu.Lock()
	tr := Trace{Max: s.maxCount, Audit: entries, Samples: samples, Lowered: append([]MaxLowering(nil), s.lowered...), End: end}
	loads := append([]*loadRun(nil), s.loads...)
	rec := s.steps
	s.mu.Unlock()
	if rec != nil {
		tr.Rounds, tr.RoundGaps, _, _ = rec.stepSnapshot()
	}
	for _, l := range loads {
		tr.Loads = append(tr.Loads, l.window())
	}
	cs := e.contract
	if cs.Interval == 0 {
		cs = e.contractSettings(ctx)
	}
	facts := JudgeContract(cs, tr)
	if f := FactAuditActors(entries, s.auditActors()); f != nil {
		facts = append(facts, *f)
	}
	for _, f := range facts {
		if e.Policy == PolicyHPA && !auditFact(f.Name) {
			continue
		}
		record(s, f)
	}
	s.judgeStepRounds(ctx, entries)
}

func auditFact(name string) bool {
	switch name {
	case "holds are not audited", "every change of the count has exactly one audit entry", factAuditActors:
		return true
	}
	return len(name) > 22 && name[:22] == "every change's audit e"
}

// lowerMax is an admin's PUT max_count under the count, recorded with what
// its answer and a GET right after it showed (FactLoweredMaxInRequest).
// It creates the group's other zone first when the scenario has none
// (ensureSibling).
func (s *Scope) lowerMax(ctx context.Context, to int) (int, error) {
	e := s.env
	if err := s.ensureSibling(ctx); err != nil {
		return 0, err
	}
	z, st, err := e.Console.PutZoneView(ctx, s.admin(), e.Endpoints.Group, s.Zone, consoleclient.Update{MaxCount: &to})
	at := time.Now()
	l := MaxLowering{At: at, To: to, PutCount: -1, GetCount: -1}
	if err == nil && st == http.StatusOK {
		l.PutCount = z.Count
	}
	g, gst, gerr := e.Console.GetZone(ctx, e.Endpoints.Keys.SuperAdmin.Key, e.Endpoints.Group, s.Zone)
	if gerr == nil && gst == http.StatusOK {
		l.GetCount = g.Count
	}
	l.Detail = fmt.Sprintf("PUT %s, GET %s %s after it", httpDetail(st, err), httpDetail(gst, gerr), time.Since(at).Round(time.Millisecond))
	s.mu.Lock()
	s.lowered = append(s.lowered, l)
	s.mu.Unlock()
	return st, err
}
