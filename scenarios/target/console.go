package target

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

// The console target: a zone of the reference console (or any autoscaler
// serving Ramen's console API), judged on Ramen 0.7.5's autoscaling notes
// ("The bounds", "How it decides", "Audit and logs").

const ramenDoc = "Ramen 0.7.5's autoscaling notes"

// ConsoleSettings are the step policy's settings the console's contracts
// count their bounds from. Zero fields take the notes' defaults.
type ConsoleSettings struct {
	// UpCooldown: no step up within it of the last change
	// (RAMEN_AUTOSCALE_UP_COOLDOWN_SECS, 30 s).
	UpCooldown time.Duration
	// DownCooldown: no step down within it of the last change
	// (RAMEN_AUTOSCALE_COOLDOWN_SECS, 120 s).
	DownCooldown time.Duration
	// Interval is the auto-rebalance scheduler's (60 s when on).
	Interval time.Duration
	// LowRounds: a step down needs this many low rounds in a row (3).
	LowRounds int
	// Max is the zone's max the back-to-min bound counts its steps down
	// from (0: the bound is for one step).
	Max int
}

// ConsoleSettingsFrom reads the console's GET /api/v1/config/autoscale
// answer (cooldowns, low rounds, the scheduler's interval; zero fields keep
// the defaults), max being the zone's max.
func ConsoleSettingsFrom(a consoleclient.AutoscaleConfig, max int) ConsoleSettings {
	return ConsoleSettings{
		UpCooldown:   dur(a.UpCooldownSeconds),
		DownCooldown: dur(a.DownCooldownSeconds),
		Interval:     dur(a.IntervalSeconds),
		LowRounds:    a.LowRounds,
		Max:          max,
	}
}

func dur(sec float64) time.Duration { return time.Duration(sec * float64(time.Second)) }

func (s ConsoleSettings) filled() ConsoleSettings {
	if s.UpCooldown <= 0 {
		s.UpCooldown = 30 * time.Second
	}
	if s.DownCooldown <= 0 {
		s.DownCooldown = 120 * time.Second
	}
	if s.Interval <= 0 {
		s.Interval = 60 * time.Second
	}
	if s.LowRounds <= 0 {
		s.LowRounds = 3
	}
	return s
}

// consoleTarget is Target over one zone of the console API.
type consoleTarget struct {
	c           *consoleclient.Client
	keys        platform.Keys
	readKey     string // State's key (the group admin's unless ReadAs)
	group, zone string
	now         func() time.Time
	contracts   Contracts
}

var _ Target = (*consoleTarget)(nil)

// NewConsole is the zone group/zone of the console c, the admin role being
// keys.GroupAdmin and the viewer keys.Viewer, with the notes' default
// settings (ConsoleSettings). Reads use the group admin's key (a viewer sees
// the count only).
func NewConsole(c *consoleclient.Client, keys platform.Keys, group, zone string) Target {
	return NewConsoleWith(c, keys, group, zone, ConsoleSettings{})
}

// NewConsoleWith is NewConsole with the console's own settings (read with
// ConsoleSettingsFrom) for the contracts' bounds, and options.
func NewConsoleWith(c *consoleclient.Client, keys platform.Keys, group, zone string, s ConsoleSettings, opts ...ConsoleOption) Target {
	t := &consoleTarget{c: c, keys: keys, readKey: keys.GroupAdmin.Key, group: group, zone: zone, now: time.Now, contracts: ConsoleContracts(s)}
	for _, o := range opts {
		o(t)
	}
	return t
}

// ConsoleOption changes how the console target reads or acts.
type ConsoleOption func(*consoleTarget)

// ReadAs makes State read the zone with key instead of the group
// admin's (the scenarios' sampler reads as the super admin, whose view no
// scenario's change to the group's keys can narrow).
func ReadAs(key string) ConsoleOption { return func(t *consoleTarget) { t.readKey = key } }

func (t *consoleTarget) Kind() Kind           { return Console }
func (t *consoleTarget) Name() string         { return "zone " + t.group + "/" + t.zone }
func (t *consoleTarget) Contracts() Contracts { return t.contracts }

func (t *consoleTarget) key(role Role) (string, error) { return ConsoleKey(t.keys, role) }

// ConsoleKey is the console's API key of role: the group admin's for
// Admin, the viewer's for Viewer; another role is an error naming both.
func ConsoleKey(keys platform.Keys, role Role) (string, error) {
	return ByRole(role, keys.GroupAdmin.Key, keys.Viewer.Key)
}

// State reads GET …/workers with the group admin's key (or ReadAs's):
// count, max_count, ready (Ready 0 when the console does not say), the last
// decision and the last change of count as "action from->to: reason"; Min
// is 1 (every zone runs between 1 and its max) and Desired the count (the
// console has no separate figure). A non-2xx answer is an error with its
// status.
func (t *consoleTarget) State(ctx context.Context) (State, error) {
	at := t.now()
	z, st, err := t.c.GetZone(ctx, t.readKey, t.group, t.zone)
	if err != nil {
		return State{}, fmt.Errorf("read zone %s/%s: %w", t.group, t.zone, err)
	}
	if st/100 != 2 {
		return State{}, fmt.Errorf("read zone %s/%s: status %d", t.group, t.zone, st)
	}
	s := State{At: at, Count: z.Count, Desired: z.Count, Min: 1}
	if z.MaxCount != nil {
		s.Max = *z.MaxCount
	} else {
		return State{}, fmt.Errorf("read zone %s/%s: no max_count in the group admin's view", t.group, t.zone)
	}
	if z.Ready != nil {
		s.Ready = *z.Ready
	}
	if d := z.LastDecision; d != nil && d.Action != "" {
		s.Decision = DecisionText(d.Action, d.From, d.To, d.Reason)
	}
	if d := z.LastScale; d != nil && d.Action != "" {
		s.Change = DecisionText(d.Action, d.From, d.To, d.Reason)
	}
	return s, nil
}

// errMinIsOne: the console's min is not a setting.
var errMinIsOne = errors.New("the console's min is always 1 (Ramen 0.7.5's autoscaling notes, The bounds)")

// SetBounds sets max_count in role's name (PUT …/workers {"max_count": max});
// min must be 1, the console's fixed min (else an error, no request).
func (t *consoleTarget) SetBounds(ctx context.Context, role Role, min, max int) (Outcome, error) {
	if min != 1 {
		return Outcome{}, fmt.Errorf("set bounds %d..%d: %w", min, max, errMinIsOne)
	}
	return t.put(ctx, role, consoleclient.Update{MaxCount: &max})
}

// SetCount sets count in role's name (PUT …/workers {"count": count}).
func (t *consoleTarget) SetCount(ctx context.Context, role Role, count int) (Outcome, error) {
	return t.put(ctx, role, consoleclient.Update{Count: &count})
}

// put answers the console's status; Message is the status text (the
// client does not keep the body).
func (t *consoleTarget) put(ctx context.Context, role Role, u consoleclient.Update) (Outcome, error) {
	key, err := t.key(role)
	if err != nil {
		return Outcome{}, err
	}
	st, err := t.c.PutZone(ctx, key, t.group, t.zone, u)
	if err != nil {
		return Outcome{}, fmt.Errorf("put zone %s/%s: %w", t.group, t.zone, err)
	}
	o := Outcome{Status: st}
	if !o.Accepted() {
		o.Message = http.StatusText(st)
	}
	return o, nil
}

// Trail reads the zone's audit with the group admin's key: every
// workers.autoscale and workers.count entry that is not a refusal, as a
// Change from its tags from:, to:, reason: with its actor (From -1 when the
// tag is missing; an entry without a readable to: is left out), at or after
// since, oldest first.
func (t *consoleTarget) Trail(ctx context.Context, since time.Time) ([]Change, error) {
	es, st, err := t.c.Audit(ctx, t.keys.GroupAdmin.Key, t.group, t.zone)
	if err != nil {
		return nil, fmt.Errorf("read audit of %s/%s: %w", t.group, t.zone, err)
	}
	if st/100 != 2 {
		return nil, fmt.Errorf("read audit of %s/%s: status %d", t.group, t.zone, st)
	}
	return AuditTrail(es, since), nil
}

// AuditTrail is the trail in audit entries es (in any order): their
// changes of count (AuditChanges) at or after since, oldest first. The
// audit lists newest first; entries of one request share a time, so their
// ids give their order. es is sorted in place.
func AuditTrail(es []consoleclient.AuditEntry, since time.Time) []Change {
	sort.SliceStable(es, func(i, j int) bool {
		if !es[i].At.Equal(es[j].At) {
			return es[i].At.Before(es[j].At)
		}
		return es[i].ID < es[j].ID
	})
	return SinceSorted(AuditChanges(es), since)
}

// AuditChanges reads audit entries as trail entries (see Trail), in the
// audit's order.
func AuditChanges(es []consoleclient.AuditEntry) []Change {
	var out []Change
	for _, e := range es {
		if (e.Action != "workers.autoscale" && e.Action != "workers.count") || e.Error != "" || e.Tags["error"] != "" {
			continue
		}
		to, err := strconv.Atoi(e.Tags["to"])
		if err != nil {
			continue
		}
		from, err := strconv.Atoi(e.Tags["from"])
		if err != nil {
			from = -1
		}
		out = append(out, Change{At: e.At, From: from, To: to, Reason: e.Tags["reason"], Actor: e.Actor, Source: "audit"})
	}
	return out
}

// auditSlack is what FactTrail allows between an audit entry's time and
// the readings around the change it records: the console stamps the entry
// with the decision's time, before it sets the scale target (a call to the
// fleet or the Kubernetes scale subresource), and a reading is timed when
// its GET is sent, so either can lead the other by one API call.
const auditSlack = time.Second

// ConsoleContracts are the reference console's contracts under its step
// policy's settings s (a zero field takes the console's default: cooldowns
// 30 s up and 120 s down, an interval of 60 s, 3 low rounds): what the
// console as a target declares, and what the console's own zones, on a
// platform or the simulator's model, are judged on (scenarios.ZoneContracts).
func ConsoleContracts(s ConsoleSettings) Contracts { return consoleContracts(s.filled()) }

func consoleContracts(s ConsoleSettings) Contracts {
	up, down, iv := Secs(s.UpCooldown), Secs(s.DownCooldown), Secs(s.Interval)
	bounds := ramenDoc + `, "The bounds"`
	decides := ramenDoc + `, "How it decides"`
	audit := ramenDoc + `, "Audit and logs"`
	// A step down comes once the low rounds have passed and the down
	// cooldown has passed, plus one interval for the round (docs/verdicts.md:
	// due by max(P + down cooldown + 1 interval, P + low rounds intervals)).
	step := max(s.DownCooldown+s.Interval, time.Duration(s.LowRounds)*s.Interval)
	steps, backText := 1, fmt.Sprintf("each step down one worker, within %s of the previous change (the down cooldown %s + one interval %s, or %d low rounds): this bound is for one step",
		Secs(step), down, iv, s.LowRounds)
	if s.Max > 1 {
		steps = s.Max - 1
		backText = fmt.Sprintf("one worker a step, each within %s of the previous change (the down cooldown %s + one interval %s, or %d low rounds): %d steps from the max %d",
			Secs(step), down, iv, s.LowRounds, steps, s.Max)
	}
	return Contracts{
		FactScalesUp: {Applies: true, Bound: s.UpCooldown + s.Interval,
			Text:   fmt.Sprintf("a ready worker over 80 %% of its in-flight limit, a mean in-flight of 50 %% or more, or the target rate per worker steps the count up proportionally at the next rebalance (every %s with the auto-rebalance scheduler on), never within the up cooldown (%s) of the last change", iv, up),
			Source: decides},
		FactWithinBounds: {Applies: true,
			Text:   "each group × zone runs between 1 (always) and its max; a count outside 1..max is refused (422)",
			Source: bounds},
		FactLoweredMax: {Applies: true,
			Text:   "a lowered max applies in the request: the PUT's answer and a GET right after it show count ≤ the new max",
			Source: bounds + ": lowering the max under load brings the count down to it at once"},
		FactViewerRefused: {Applies: true,
			Text:   "viewers see the count only; their attempt to set the max or the count is 403 and changes nothing",
			Source: bounds},
		FactAdminAllowed: {Applies: true,
			Text:   "a group admin of the group sets the max (PUT …/workers {\"max_count\": N})",
			Source: bounds},
		// Kept, so no Bound (a Bound would mean "put back within it"): a
		// count set by hand is the last change, so the cooldowns run from
		// it and the low rounds start again; without load it stays as set
		// for at least the down cooldown, then steps down from there.
		FactCountSet: {Applies: true,
			Text:   fmt.Sprintf("kept: the console owns the count and steps from it, no step up within the up cooldown (%s) and no step down within the down cooldown (%s) of the change; without load the count stays as set for at least the down cooldown", up, down),
			Source: decides + "; " + audit + ": workers.count a manual count"},
		FactTrail: {Applies: true, Bound: auditSlack,
			Text:   fmt.Sprintf("every change of the count has exactly one audit entry (workers.autoscale from: to: reason:, workers.count from: to:), written with the change; its time is the decision's, taken just before the scale target is set, so within %s of the readings around the change", Secs(auditSlack)),
			Source: audit},
		FactTrailActor: {Applies: true,
			Text:   "every audit entry names the actor that caused it (the key for a forced change, the scheduler for autoscale)",
			Source: audit + ": every action is on the Audit page with the actor"},
		FactNoEarlyScaleDown: {Applies: true, Bound: time.Duration(s.LowRounds-1) * s.Interval,
			Text:   fmt.Sprintf("no step down before %d low rounds in a row (%s after the load drops, at one round every %s), nor within the down cooldown (%s) of the last change", s.LowRounds, Secs(time.Duration(s.LowRounds-1)*s.Interval), iv, down),
			Source: decides},
		FactBackToMin: {Applies: true, Bound: time.Duration(steps) * step,
			Text:   "after the load the count steps back down to 1, " + backText,
			Source: decides + "; docs/verdicts.md, once a step down is allowed it comes within one scheduler interval"},
		FactOutageHolds: {Applies: true,
			Text:   "a worker that does not answer counts as down, never as low, so an outage never scales a zone in",
			Source: decides},
	}
}
