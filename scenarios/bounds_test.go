package scenarios

import (
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
)

func TestFactSiblingUnmoved(t *testing.T) {
	created := []consoleclient.AuditEntry{
		{ID: 2, At: at(0), Actor: "ga", Action: "workers.count", Tags: map[string]string{"from": "0", "to": "1"}},
		{ID: 1, At: at(0), Actor: "ga", Action: "workers.max_count", Tags: map[string]string{"from": "0", "to": "4", "created": "true"}},
	}
	before := ZoneSnapshot{Count: 1, Max: 4, Audit: created}
	withEntry := func(en consoleclient.AuditEntry) []consoleclient.AuditEntry {
		return append([]consoleclient.AuditEntry{en}, created...)
	}
	retagged := append([]consoleclient.AuditEntry(nil), created...)
	retagged[1] = consoleclient.AuditEntry{ID: 1, At: at(0), Actor: "ga", Action: "workers.max_count", Tags: map[string]string{"from": "0", "to": "1"}}
	for _, c := range []struct {
		name   string
		after  ZoneSnapshot
		passed bool
		says   string
	}{
		{"nothing moved", ZoneSnapshot{Count: 1, Max: 4, Audit: created}, true, "now count 1, max 4, 2 entries"},
		{"the max leaked, not audited", ZoneSnapshot{Count: 1, Max: 1, Audit: created}, false, "max 4 -> 1"},
		{"the count moved", ZoneSnapshot{Count: 2, Max: 4, Audit: created}, false, "count 1 -> 2"},
		{"a new entry", ZoneSnapshot{Count: 1, Max: 4, Audit: withEntry(consoleclient.AuditEntry{ID: 9, At: at(5), Actor: "ga",
			Action: "workers.max_count", Tags: map[string]string{"from": "4", "to": "1"}})}, false, "new audit entry #9 workers.max_count from:4 to:1 by ga"},
		{"an entry rewritten", ZoneSnapshot{Count: 1, Max: 4, Audit: retagged}, false, "audit entry changed: #1"},
		{"an entry gone", ZoneSnapshot{Count: 1, Max: 4, Audit: created[:1]}, false, "audit entry gone: #1"},
		{"unreadable", ZoneSnapshot{Err: "GET workers HTTP 502"}, false, "HTTP 502"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := FactSiblingUnmoved("z-sibling", before, c.after)
			if f.Name != factSiblingUnmoved || f.Passed != c.passed || !strings.Contains(f.Detail, c.says) {
				t.Errorf("got %+v, want passed %v with %q", f, c.passed, c.says)
			}
		})
	}
}

func TestFactAuditActors(t *testing.T) {
	a := AuditActors{Changer: "ga", Keys: []string{"root", "ga", "v", "m"}, Scheduler: "scheduler"}
	entry := func(id uint64, actor, action string, tags map[string]string, err string) consoleclient.AuditEntry {
		return consoleclient.AuditEntry{ID: id, At: at(float64(id)), Actor: actor, Action: action, Tags: tags, Error: err}
	}
	clean := []consoleclient.AuditEntry{
		entry(1, "ga", "workers.max_count", map[string]string{"from": "0", "to": "3"}, ""),
		entry(2, "ga", "workers.count", map[string]string{"from": "0", "to": "1"}, ""),
		entry(3, "scheduler", "workers.autoscale", map[string]string{"action": "up", "from": "1", "to": "3"}, ""),
		entry(4, "v", "workers.max_count", map[string]string{"error": "forbidden"}, "forbidden"),
		entry(5, "ga", "workers.count", map[string]string{"error": "invalid"}, "invalid"),
		entry(6, "ga", "workers.policy", map[string]string{"from": "step", "to": "hpa"}, ""),
	}
	with := func(en consoleclient.AuditEntry) []consoleclient.AuditEntry {
		return append(append([]consoleclient.AuditEntry(nil), clean...), en)
	}
	for _, c := range []struct {
		name   string
		audit  []consoleclient.AuditEntry
		passed bool
		says   string
	}{
		{"each by its actor", clean, true, "6 entries: 3 forced changes (the harness makes each with the key ga), 1 autoscale step (scheduler), 2 refused attempts"},
		{"a forced count named the scheduler", with(entry(7, "scheduler", "workers.count", map[string]string{"from": "3", "to": "1"}, "")),
			false, "#7 workers.count from:3 to:1 by scheduler: a forced change, made with the key ga"},
		{"an autoscale step named a key", with(entry(7, "ga", "workers.autoscale", map[string]string{"action": "down", "from": "3", "to": "2"}, "")),
			false, "an autoscale step, so made by scheduler"},
		{"a refusal named the scheduler", with(entry(7, "scheduler", "workers.count", map[string]string{"error": "invalid"}, "invalid")),
			false, "refused, so made by one of the keys"},
		{"no actor", with(entry(7, "", "workers.rebalance", nil, "")), false, "by no actor"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := FactAuditActors(c.audit, a)
			if f == nil || f.Name != factAuditActors || f.Passed != c.passed || !strings.Contains(f.Detail, c.says) {
				t.Errorf("got %+v, want passed %v with %q", f, c.passed, c.says)
			}
		})
	}
	if f := FactAuditActors(nil, a); f != nil {
		t.Errorf("an empty audit: %+v, want no fact", f)
	}
}
