package scenarios

// The bounds and the audit's actors and readers (Ramen 0.7.5's autoscaling
// notes, "The bounds" and "Audit and logs"): a sibling zone of the same
// group that a scenario changing a bound must leave alone, the bounds probes
// an admin's PUT must refuse with 422, the actor every audit entry names,
// and the admin-only reads a viewer or an MCP user is refused.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// The facts' names (the self-test's table and docs/verdicts.md quote them).
const (
	factSiblingUnmoved = "the group's other zone did not move: count, max and audit unchanged"
	factAuditActors    = "every audit entry names the actor that caused it (the key for a forced change, the scheduler for autoscale)"
	factRolesOnRoutes  = "viewer and MCP-user keys get 403 on every mutating route the console lists: nothing changed, each refusal audited"
)

// seedScheduler is the audit actor of the scheduler's rounds ("Audit and
// logs": the actor is a person, an API key or scheduler).
const seedScheduler = "scheduler"

// SiblingSuffix names a scenario's sibling zone: its zone + "-sibling".
const SiblingSuffix = "-sibling"

// ZoneSnapshot is what the harness read of a zone at one time: its count
// and max as the super admin sees them, and its audit trail.
type ZoneSnapshot struct {
	Count, Max int
	Audit      []consoleclient.AuditEntry
	Err        string // why the zone or its audit could not be read; "" when both were
}

// sibling is a scenario's sibling zone and what it was right after its creation.
type sibling struct {
	zone   string
	before ZoneSnapshot
}

// ensureSibling creates, once per scenario, the sibling zone: another zone
// of the scenario's group with its own count 1 and max (the profile's max +
// 1, so a max leaked from the scenario's zone shows), and no load. It
// records the zone as created, for the zone-isolation fact the scenario's
// end judges (judgeSibling). The sibling's workers are not waited for: its
// count, max and audit are what is judged.
func (s *Scope) ensureSibling(ctx context.Context) error {
	s.mu.Lock()
	have := s.sibling != nil
	s.mu.Unlock()
	if have {
		return nil
	}
	e := s.env
	zone := s.Zone + SiblingSuffix
	one, max := 1, e.Profile.Max+1
	st, err := e.Console.PutZone(ctx, s.admin(), e.Endpoints.Group, zone, consoleclient.Update{Count: &one, MaxCount: &max})
	if err != nil || st != http.StatusOK {
		return fmt.Errorf("create the group's other zone %s/%s with count 1, max %d: %s", e.Endpoints.Group, zone, max, httpDetail(st, err))
	}
	before := s.snapshot(ctx, zone)
	if before.Err != "" {
		return fmt.Errorf("read the group's other zone %s/%s after creating it: %s", e.Endpoints.Group, zone, before.Err)
	}
	s.mu.Lock()
	s.sibling = &sibling{zone: zone, before: before}
	s.mu.Unlock()
	e.Log.Info("the group's other zone", "scenario", s.Name, "zone", zone, "count", before.Count, "max", before.Max)
	return nil
}

// snapshot reads zone's count, max and audit trail as the super admin.
func (s *Scope) snapshot(ctx context.Context, zone string) ZoneSnapshot {
	e := s.env
	key := e.Endpoints.Keys.SuperAdmin.Key
	z, st, err := e.Console.GetZone(ctx, key, e.Endpoints.Group, zone)
	if err != nil || st != http.StatusOK || z.MaxCount == nil {
		return ZoneSnapshot{Err: fmt.Sprintf("GET workers %s (max_count shown: %v)", httpDetail(st, err), z.MaxCount != nil)}
	}
	out := ZoneSnapshot{Count: z.Count, Max: *z.MaxCount}
	entries, st, err := e.Console.Audit(ctx, key, e.Endpoints.Group, zone)
	if err != nil || st != http.StatusOK {
		out.Err = "GET audit " + httpDetail(st, err)
		return out
	}
	out.Audit = entries
	return out
}

// judgeSibling adds the zone-isolation fact when the scenario made a
// sibling zone: its count, max and audit now against right after its
// creation. Bounded by 10 s.
func (s *Scope) judgeSibling() {
	s.mu.Lock()
	sib := s.sibling
	s.mu.Unlock()
	if sib == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := FactSiblingUnmoved(sib.zone, sib.before, s.snapshot(ctx, sib.zone))
	record(s, f)
}

// FactSiblingUnmoved: a scenario that changed a bound of its zone (a max,
// a count) left the group's other zone as it was: the same count and max,
// and not one audit entry added, removed or changed ("The bounds": the max
// is per group × zone).
func FactSiblingUnmoved(zone string, before, after ZoneSnapshot) reports.Fact {
	if after.Err != "" {
		return reports.Fact{Name: factSiblingUnmoved, Detail: fmt.Sprintf("zone %s: %s", zone, after.Err)}
	}
	var bad []string
	if after.Count != before.Count {
		bad = append(bad, fmt.Sprintf("count %d -> %d", before.Count, after.Count))
	}
	if after.Max != before.Max {
		bad = append(bad, fmt.Sprintf("max %d -> %d", before.Max, after.Max))
	}
	was := map[uint64]consoleclient.AuditEntry{}
	for _, en := range before.Audit {
		was[en.ID] = en
	}
	now := map[uint64]bool{}
	for _, en := range after.Audit {
		now[en.ID] = true
		old, ok := was[en.ID]
		switch {
		case !ok:
			bad = append(bad, "new audit entry "+entryWords(en))
		case !sameEntry(old, en):
			bad = append(bad, "audit entry changed: "+entryWords(old)+" is now "+entryWords(en))
		}
	}
	for _, en := range before.Audit {
		if !now[en.ID] {
			bad = append(bad, "audit entry gone: "+entryWords(en))
		}
	}
	return reports.Fact{Name: factSiblingUnmoved, Passed: len(bad) == 0,
		Detail: fmt.Sprintf("zone %s: count %d, max %d, %d audit entries when created; now count %d, max %d, %d entries%s",
			zone, before.Count, before.Max, len(before.Audit), after.Count, after.Max, len(after.Audit), listed(bad))}
}

func sameEntry(a, b consoleclient.AuditEntry) bool {
	return a.At.Equal(b.At) && a.Actor == b.Actor && a.Action == b.Action && a.Error == b.Error && a.Zone == b.Zone &&
		a.Group == b.Group && fmt.Sprint(a.Tags) == fmt.Sprint(b.Tags)
}

// entryWords renders an audit entry for a fact: "#12 workers.max_count
// from:4 to:1 by ga".
func entryWords(en consoleclient.AuditEntry) string {
	keys := make([]string, 0, len(en.Tags))
	for k := range en.Tags {
		if k != "detail" && k != "hpa" && k != "from_hpa" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var tags []string
	for _, k := range keys {
		tags = append(tags, k+":"+en.Tags[k])
	}
	actor := en.Actor
	if actor == "" {
		actor = "no actor"
	}
	return strings.TrimSpace(fmt.Sprintf("#%d %s %s by %s", en.ID, en.Action, strings.Join(tags, " "), actor))
}

// AuditActors are the names FactAuditActors judges a zone's audit against.
type AuditActors struct {
	// Changer is the key name every change the harness forces is made with
	// (the group admin's): a zone's creation, a count, a max, a policy.
	Changer string
	// Keys are every key name the harness calls the console with; a
	// refused attempt names one of them.
	Keys []string
	// Scheduler is the actor of the scheduler's rounds ("scheduler").
	Scheduler string
}

// auditActors are the run's key names.
func (s *Scope) auditActors() AuditActors {
	k := s.env.Endpoints.Keys
	return AuditActors{Changer: k.GroupAdmin.Name, Scheduler: seedScheduler,
		Keys: []string{k.SuperAdmin.Name, k.GroupAdmin.Name, k.Viewer.Name, k.MCPUser.Name}}
}

// FactAuditActors: every audit entry of a zone names the actor that caused
// it ("Audit and logs": every action is on the Audit page with the actor):
// a forced change (workers.count, workers.max_count, workers.policy) the
// key that made it, a workers.autoscale step the scheduler, a refused
// attempt the key that tried it; no entry without an actor. Nil for an
// empty audit.
func FactAuditActors(audit []consoleclient.AuditEntry, a AuditActors) *reports.Fact {
	if len(audit) == 0 {
		return nil
	}
	var bad []string
	forced, steps, refusals := 0, 0, 0
	for _, en := range audit {
		switch {
		case en.Actor == "":
			bad = append(bad, entryWords(en))
		case refused(en):
			refusals++
			if !slices.Contains(a.Keys, en.Actor) {
				bad = append(bad, fmt.Sprintf("%s: refused, so made by one of the keys %s", entryWords(en), strings.Join(a.Keys, ", ")))
			}
		case en.Action == auditAutoscale:
			steps++
			if en.Actor != a.Scheduler {
				bad = append(bad, fmt.Sprintf("%s: an autoscale step, so made by %s", entryWords(en), a.Scheduler))
			}
		case en.Action == auditCount || en.Action == auditMaxCount || en.Action == auditPolicy:
			forced++
			if en.Actor != a.Changer {
				bad = append(bad, fmt.Sprintf("%s: a forced change, made with the key %s", entryWords(en), a.Changer))
			}
		}
	}
	return fact(factAuditActors, len(bad) == 0,
		"%s: %s (the harness makes each with the key %s), %s (%s), %s (each by the key that tried)%s",
		countOf(len(audit), "entry", "entries"), countOf(forced, "forced change", "forced changes"), a.Changer,
		countOf(steps, "autoscale step", "autoscale steps"), a.Scheduler, countOf(refusals, "refused attempt", "refused attempts"), listed(bad))
}

// countOf renders n with its noun: "1 entry", "3 entries".
func countOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// auditPolicy is the audit action of a zone's policy change (the reference
// console's; policy.go).
const auditPolicy = "workers.policy"

// probeBounds is the bounds probes on w ("The bounds": a count outside
// 1..max is refused (422)): as the group admin, a count above the max, a
// max below 1, and a max and count in one request that disagree (each valid
// alone, the count above that max). Each must answer 422, leave the zone's
// count and max as they were (a read after it) and add an error:invalid
// entry by the group admin to the zone's audit. Call it while nothing else
// changes the zone's count (idle at 1, or held at the max).
func probeBounds(ctx context.Context, w World) {
	admin := w.Admin()
	start := w.Snapshot(ctx)
	if !w.Check("the zone is readable before the bounds probes", start.Err == "", "%s",
		errOr(nilIfEmpty(start.Err), "count %d, max %d, %s", start.Count, start.Max, countOf(len(start.Audit), "audit entry", "audit entries"))) {
		return
	}
	seen := map[uint64]bool{}
	for _, en := range start.Audit {
		seen[en.ID] = true
	}
	c, m := start.Count, start.Max
	agreeMax := max(1, m-1)
	above, zero, disagree := m+1, 0, agreeMax+1
	for _, p := range []struct {
		name string
		u    consoleclient.Update
	}{
		{fmt.Sprintf("an admin's count above the max (count %d, max %d) is refused with 422", above, m), consoleclient.Update{Count: &above}},
		{"an admin's max below 1 (max 0) is refused with 422", consoleclient.Update{MaxCount: &zero}},
		{fmt.Sprintf("an admin's max and count that disagree in one request (max %d, count %d) are refused with 422", agreeMax, disagree),
			consoleclient.Update{MaxCount: &agreeMax, Count: &disagree}},
	} {
		o, err := w.PutBounds(ctx, target.Admin, p.u)
		st := o.Status
		after := w.Snapshot(ctx)
		var invalid []string
		for _, en := range after.Audit {
			if seen[en.ID] {
				continue
			}
			seen[en.ID] = true
			if en.Actor == admin && (en.Error == "invalid" || en.Tags["error"] == "invalid") {
				invalid = append(invalid, en.Action)
			}
		}
		ok := err == nil && st == http.StatusUnprocessableEntity && after.Err == "" && after.Count == c && after.Max == m && len(invalid) > 0
		w.Check(p.name+": nothing changed, error:invalid audited", ok,
			"%s; count %d -> %d, max %d -> %d (GET after it%s); %s by %s %v",
			httpDetail(st, err), c, after.Count, m, after.Max, suffix(after.Err),
			countOf(len(invalid), "new error:invalid entry", "new error:invalid entries"), admin, invalid)
		if after.Err == "" {
			c, m = after.Count, after.Max // judge the next probe against what is, not what was
		}
	}
}

// probeAdminReads checks that key (a viewer's or an MCP user's) is refused
// every admin-only read of the console API: the audit log (all of it, and
// the zone's) and the zone's policy. A console without the policy API
// answers 404 there: that is no read either.
func (s *Scope) probeAdminReads(ctx context.Context, who, key string) {
	e := s.env
	g := e.Endpoints.Group
	var parts []string
	ok := true
	_, st, err := e.Console.Audit(ctx, key, "", "")
	ok = ok && err == nil && st == http.StatusForbidden
	parts = append(parts, "GET /api/v1/audit "+httpDetail(st, err))
	_, st, err = e.Console.Audit(ctx, key, g, s.Zone)
	ok = ok && err == nil && st == http.StatusForbidden
	parts = append(parts, "GET /api/v1/audit?group=&zone= (this zone) "+httpDetail(st, err))
	_, st, err = e.Console.GetPolicy(ctx, key, g, s.Zone)
	ok = ok && err == nil && (st == http.StatusForbidden || st == http.StatusNotFound)
	parts = append(parts, "GET …/policy "+httpDetail(st, err))
	s.Check(who+" gets 403 on every admin-only read (the audit log, the zone's audit, the zone's policy)", ok,
		"%s", strings.Join(parts, "; "))
}

// nilIfEmpty is an error of msg, nil for "".
func nilIfEmpty(msg string) error {
	if msg == "" {
		return nil
	}
	return errors.New(msg)
}

// probeMutatingRoutes reads the console's API index (GET /api/v1, with the
// viewer's key) and sends every mutating method of every route it lists
// ({g} and {z} the scenario's zone, a body of {}) with the viewer's and the
// MCP user's keys. Each must be 403, the zone's count, max and policy and
// the scheduler's configuration must not change, and the audit log must
// gain a forbidden entry by the key for each (Ramen 0.7.5's autoscaling
// notes, "The bounds" and "Audit and logs": only super admins and group
// admins change a zone; a refused attempt is audited). A route added to the
// console is probed without a change here. A console without an index
// (404): not applicable.
func (s *Scope) probeMutatingRoutes(ctx context.Context) {
	e := s.env
	g, admin := e.Endpoints.Group, e.Endpoints.Keys.SuperAdmin.Key
	routes, st, err := e.Console.Routes(ctx, e.Endpoints.Keys.Viewer.Key)
	switch {
	case err == nil && st == http.StatusNotFound:
		s.NotApplicable(factRolesOnRoutes, "the console lists no routes (GET /api/v1 answered 404)")
		return
	case err != nil || st != http.StatusOK || len(routes) == 0:
		s.Check(factRolesOnRoutes, false, "GET /api/v1 (the API index): %s, %d routes", httpDetail(st, err), len(routes))
		return
	}
	state := func() string {
		z, zst, zerr := e.Console.GetZone(ctx, admin, g, s.Zone)
		p, pst, perr := e.Console.GetPolicy(ctx, admin, g, s.Zone)
		hpa, _ := json.Marshal(p.HPA)
		a, ast, aerr := e.Console.GetAutorebalance(ctx, admin)
		return fmt.Sprintf("count %d max %v (%s); policy %q %s max %d (%s); scheduler enabled %v every %g s (%s)",
			z.Count, derefInt(z.MaxCount), httpDetail(zst, zerr), p.Policy, hpa, p.MaxCount, httpDetail(pst, perr),
			a.Enabled, a.IntervalSeconds, httpDetail(ast, aerr))
	}
	forbidden := func() map[string]int {
		n := map[string]int{}
		entries, _, _ := e.Console.Audit(ctx, admin, "", "")
		for _, en := range entries {
			if en.Error == "forbidden" || en.Tags["error"] == "forbidden" {
				n[en.Actor]++
			}
		}
		return n
	}
	before, auditBefore := state(), forbidden()
	fill := strings.NewReplacer("{g}", url.PathEscape(g), "{z}", url.PathEscape(s.Zone))
	var bad []string
	tried := 0
	refused := map[string]int{}
	for _, k := range []struct{ who, key, name string }{
		{"viewer", e.Endpoints.Keys.Viewer.Key, e.Endpoints.Keys.Viewer.Name},
		{"MCP user", e.Endpoints.Keys.MCPUser.Key, e.Endpoints.Keys.MCPUser.Name},
	} {
		for _, rt := range routes {
			for _, m := range rt.Methods {
				if m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions {
					continue
				}
				tried++
				st, err := e.Console.Send(ctx, m, fill.Replace(rt.Path), k.key, json.RawMessage("{}"))
				if err != nil || st != http.StatusForbidden {
					bad = append(bad, fmt.Sprintf("%s %s %s: %s, want 403", k.who, m, rt.Path, httpDetail(st, err)))
					continue
				}
				refused[k.name]++
			}
		}
	}
	after, auditAfter := state(), forbidden()
	if after != before {
		bad = append(bad, fmt.Sprintf("changed: before %s; after %s", before, after))
	}
	for name, n := range refused {
		if got := auditAfter[name] - auditBefore[name]; got < n {
			bad = append(bad, fmt.Sprintf("%d refusals of %s, %d audited as forbidden", n, name, got))
		}
	}
	if tried == 0 {
		bad = append(bad, "the index lists no mutating route")
	}
	s.Check(factRolesOnRoutes, len(bad) == 0, "%d routes listed by GET /api/v1, %d mutating requests tried (each mutating method, both keys, body {}); %s%s",
		len(routes), tried, after, listed(bad))
}

func derefInt(p *int) any {
	if p == nil {
		return "hidden"
	}
	return *p
}
