package console_test

import (
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/autoscaler/controller"
	"github.com/scaleproof/scaleproof/autoscaler/store"
)

const policy = "/api/v1/groups/g1/zones/a/policy"

const hpaBody = `{"policy":"hpa","hpa":{"query":"sum(max_over_time(scaleproof_edge_inflight_requests{group=\"%s\",quantile=\"0.75\"}[2m]))",` +
	`"threshold":4,"target":"AverageValue","min_replicas":1,"max_replicas":3,"polling_interval_seconds":30,"read_empty_as_zero":false,` +
	`"fallback":{"failure_threshold":3,"replicas":2},"behavior":{"scale_down":{"stabilization_window_seconds":300},"scale_up":{"stabilization_window_seconds":0}}}}`

// TestPolicyRoles: only a super admin and a group admin of g1 read or set
// g1's zone policy; everyone else is 403 and audited error:forbidden.
func TestPolicyRoles(t *testing.T) {
	tests := []struct {
		caller, method, body string
		want                 int
	}{
		{"root", "GET", "", 200}, {"ga", "GET", "", 200},
		{"gb", "GET", "", 403}, {"v", "GET", "", 403}, {"m", "GET", "", 403},
		{"none", "GET", "", 401}, {"unknown", "GET", "", 401},
		{"root", "PUT", hpaBody, 200}, {"ga", "PUT", `{"policy":"step"}`, 200},
		{"gb", "PUT", hpaBody, 403}, {"v", "PUT", hpaBody, 403}, {"m", "PUT", `{"policy":"step"}`, 403},
		{"v", "PUT", `not json`, 403}, // refused whatever the body says
		{"none", "PUT", hpaBody, 401},
	}
	for _, tc := range tests {
		t.Run(tc.caller+" "+tc.method, func(t *testing.T) {
			r := newRig(t)
			before := r.lastAudit(t)
			st, m := r.do(t, tc.caller, tc.method, policy, tc.body)
			if st != tc.want {
				t.Fatalf("HTTP %d %v, want %d", st, m, tc.want)
			}
			after := r.lastAudit(t)
			switch tc.want {
			case 403:
				if after.ID == before.ID || after.Action != controller.AuditPolicy || after.Error != "forbidden" ||
					after.Actor != tc.caller || after.Group != "g1" || after.Zone != "a" {
					t.Fatalf("audit %+v, want workers.policy error:forbidden by %s", after, tc.caller)
				}
				if s, _ := m["error"].(string); !strings.Contains(s, "group admin of g1") {
					t.Fatalf("error %q", s)
				}
			case 200:
				if m["group"] != "g1" || m["zone"] != "a" || m["policy"] == nil {
					t.Fatalf("body %v", m)
				}
				if tc.method == "GET" && after.ID != before.ID {
					t.Fatalf("a read was audited: %+v", after)
				}
				if tc.method == "PUT" && (after.Action != controller.AuditPolicy || after.Actor != tc.caller || after.Error != "") {
					t.Fatalf("audit %+v, want workers.policy by %s", after, tc.caller)
				}
			case 401:
				if after.ID != before.ID {
					t.Fatalf("an unauthenticated request was audited: %+v", after)
				}
			}
		})
	}
}

// TestPolicyPutAndGet: the seed-shaped body round-trips with its defaults
// filled in, the audit says from/to, and GET shows it with its status.
func TestPolicyPutAndGet(t *testing.T) {
	r := newRig(t)
	st, m := r.do(t, "ga", "PUT", policy, hpaBody)
	if st != 200 {
		t.Fatalf("PUT: %d %v", st, m)
	}
	h, _ := m["hpa"].(map[string]any)
	if h["threshold"] != 4.0 || h["max_replicas"] != 3.0 || h["target"] != "AverageValue" ||
		!strings.Contains(h["query"].(string), `group="%s"`) {
		t.Fatalf("hpa %v", h)
	}
	b := h["behavior"].(map[string]any)["scale_down"].(map[string]any)
	if b["stabilization_window_seconds"] != 300.0 || b["select_policy"] != "Max" || b["tolerance"] != 0.1 {
		t.Fatalf("scale_down defaults %v", b)
	}
	if m["effective_max_replicas"] != 3.0 || m["max_count"] != 3.0 {
		t.Fatalf("bounds %v", m)
	}
	e := r.lastAudit(t)
	if e.Tags["from"] != "step" || e.Tags["to"] != "hpa" || !strings.Contains(e.Tags["hpa"], "threshold=4") {
		t.Fatalf("audit %+v", e)
	}
	st, m = r.do(t, "root", "GET", policy, "")
	if st != 200 || m["policy"] != "hpa" || m["status"] == nil {
		t.Fatalf("GET: %d %v", st, m)
	}
	if st, m = r.do(t, "root", "PUT", policy, `{"policy":"step"}`); st != 200 || m["policy"] != "step" || m["hpa"] != nil {
		t.Fatalf("back to step: %d %v", st, m)
	}
	if e := r.lastAudit(t); e.Tags["from"] != "hpa" || e.Tags["to"] != "step" {
		t.Fatalf("audit %+v", e)
	}
}

// TestPolicyBadRequests: malformed is 400 (not audited), out of range 422
// (audited error:invalid) with a message naming the field, unknown zone 404.
func TestPolicyBadRequests(t *testing.T) {
	tests := []struct {
		name, path, body string
		want             int
		msg              string
	}{
		{"not JSON", policy, `{`, 400, "invalid JSON"},
		{"empty body", policy, ``, 400, "empty body"},
		{"unknown field", policy, `{"policy":"hpa","hpa":{"query":"q","threshold":1,"cooldown":5}}`, 400, "cooldown"},
		{"wrong type", policy, `{"policy":"hpa","hpa":{"query":"q","threshold":"4"}}`, 400, "threshold"},
		{"trailing data", policy, `{"policy":"step"} {}`, 400, "trailing"},
		{"no policy", policy, `{}`, 400, `missing "policy"`},
		{"bad zone name", "/api/v1/groups/g1/zones/-a/policy", `{"policy":"step"}`, 400, "invalid zone name"},
		{"unknown zone", "/api/v1/groups/g1/zones/nope/policy", `{"policy":"step"}`, 404, "no such zone"},
		{"unknown policy", policy, `{"policy":"keda"}`, 422, `policy: "keda": want step or hpa`},
		{"hpa without settings", policy, `{"policy":"hpa"}`, 422, "needs its settings"},
		{"no query", policy, `{"policy":"hpa","hpa":{"threshold":4}}`, 422, "query is required"},
		{"threshold 0", policy, `{"policy":"hpa","hpa":{"query":"q","threshold":0}}`, 422, "threshold 0"},
		{"max above max_count", policy, `{"policy":"hpa","hpa":{"query":"q","threshold":4,"max_replicas":4}}`, 422,
			"max_replicas 4 is above the zone's max_count 3: raise max_count first"},
		{"two bad fields", policy, `{"policy":"hpa","hpa":{"query":"q","threshold":-1,"min_replicas":0}}`, 422, "threshold -1: want a number > 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			before := r.lastAudit(t)
			st, m := r.do(t, "ga", "PUT", tc.path, tc.body)
			msg, _ := m["error"].(string)
			if st != tc.want || !strings.Contains(msg, tc.msg) {
				t.Fatalf("HTTP %d %q, want %d with %q", st, msg, tc.want, tc.msg)
			}
			after := r.lastAudit(t)
			switch tc.want {
			case 422:
				if after.ID == before.ID || after.Error != "invalid" || after.Action != controller.AuditPolicy {
					t.Fatalf("audit %+v, want workers.policy error:invalid", after)
				}
			default:
				if after.ID != before.ID {
					t.Fatalf("a malformed request was audited: %+v", after)
				}
			}
			if v, _ := r.c.Policy("g1", "a"); v.Policy != "step" {
				t.Fatalf("the policy changed: %+v", v)
			}
		})
	}
}

// TestPutMaxCountBoundsHPAMax: PUT workers max_count under the hpa max
// lowers it (audited workers.policy, reason max_count lowered).
func TestPutMaxCountBoundsHPAMax(t *testing.T) {
	r := newRig(t)
	if st, m := r.do(t, "ga", "PUT", policy, hpaBody); st != 200 {
		t.Fatalf("PUT policy: %d %v", st, m)
	}
	if st, m := r.do(t, "ga", "PUT", workers, `{"max_count": 2}`); st != 200 {
		t.Fatalf("PUT max_count: %d %v", st, m)
	}
	_, m := r.do(t, "ga", "GET", policy, "")
	if h := m["hpa"].(map[string]any); h["max_replicas"] != 2.0 || m["effective_max_replicas"] != 2.0 {
		t.Fatalf("after max_count 2: %v", m)
	}
	es, err := r.store.Audit(store.AuditQuery{Group: "g1", Zone: "a", Action: controller.AuditPolicy, Limit: 1})
	if err != nil || len(es) != 1 || es[0].Tags["reason"] != "max_count lowered" || es[0].Tags["max_replicas_to"] != "2" {
		t.Fatalf("audit %+v %v", es, err)
	}
}
