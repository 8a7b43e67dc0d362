package janitor

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/cloud"
	"github.com/scaleproof/scaleproof/cloud/cloudfake"
)

var now = time.Unix(1_800_000_000, 0)

func ours(run string, expires time.Time) map[string]string {
	return map[string]string{cloud.LabelManagedBy: cloud.ManagedByValue, cloud.LabelRunID: run,
		cloud.LabelExpiresAt: strconv.FormatInt(expires.Unix(), 10)}
}

func mix() []cloud.Resource {
	return []cloud.Resource{
		{Kind: "repository", Name: "scaleproof-old", Labels: ours("old", now.Add(-time.Hour))},
		{Kind: "node pool", Name: "scaleproof", ID: "clusters/scaleproof-old/nodePools/scaleproof", Labels: ours("old", now.Add(-time.Hour))},
		{Kind: "cluster", Name: "scaleproof-old", ID: "clusters/scaleproof-old", Labels: ours("old", now.Add(-time.Hour))},
		{Kind: "cluster", Name: "scaleproof-new", ID: "clusters/scaleproof-new", Labels: ours("new", now.Add(time.Hour))},
		{Kind: "cluster", Name: "prod", ID: "clusters/prod", Labels: map[string]string{"team": "payments", cloud.LabelExpiresAt: "1"}},
		{Kind: "cluster", Name: "lookalike", Labels: map[string]string{cloud.LabelManagedBy: "someone-else", cloud.LabelExpiresAt: "1"}},
		{Kind: "cluster", Name: "scaleproof-noexp", Labels: map[string]string{cloud.LabelManagedBy: cloud.ManagedByValue}},
		{Kind: "repository", Name: "scaleproof-badexp", Labels: map[string]string{cloud.LabelManagedBy: cloud.ManagedByValue, cloud.LabelExpiresAt: "tomorrow"}},
		{Kind: "node pool", Name: "orphan", ID: "clusters/gone/nodePools/orphan", Labels: ours("gone", now.Add(-time.Minute))},
		{Kind: "role", Name: "scaleproof-old-role", Labels: ours("old", now.Add(-time.Hour))},
	}
}

func TestPlan(t *testing.T) {
	items := Plan(mix(), now)
	got := map[string]Action{}
	var order []string
	for _, it := range items {
		got[it.Resource.String()] = it.Action
		if it.Action == Delete {
			order = append(order, it.Resource.String())
		}
		if it.Why == "" {
			t.Errorf("%s: no reason", it.Resource)
		}
	}
	for _, tc := range []struct {
		res  string
		want Action
	}{
		{"cluster scaleproof-old", Delete},
		{"node pool scaleproof", WithCluster},
		{"repository scaleproof-old", Delete},
		{"role scaleproof-old-role", Delete},
		{"node pool orphan", Delete},
		{"cluster scaleproof-new", Keep},
		{"cluster prod", Foreign},
		{"cluster lookalike", Foreign},
		{"cluster scaleproof-noexp", Leave},
		{"repository scaleproof-badexp", Leave},
	} {
		if got[tc.res] != tc.want {
			t.Errorf("%s: %q, want %q", tc.res, got[tc.res], tc.want)
		}
	}
	want := []string{"cluster scaleproof-old", "node pool orphan", "repository scaleproof-old", "role scaleproof-old-role"}
	if !slices.Equal(order, want) {
		t.Errorf("delete order %v, want %v", order, want)
	}
	// the expiry instant itself is expired
	at := Plan([]cloud.Resource{{Kind: "cluster", Name: "x", Labels: ours("x", now)}}, now)
	if at[0].Action != Delete {
		t.Errorf("at expiry: %s", at[0].Action)
	}
}

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name        string
		dryRun      bool
		failDelete  map[string]error
		wantLeft    []string // resources that still exist after
		wantDeleted int
		wantErr     string
		wantOut     []string
	}{
		{name: "deletes only expired ours", wantDeleted: 4,
			wantLeft: []string{"cluster scaleproof-new", "cluster prod", "cluster lookalike", "cluster scaleproof-noexp", "repository scaleproof-badexp"},
			wantOut:  []string{"deleted       cluster scaleproof-old", "LEFT          cluster scaleproof-noexp", "keep          cluster scaleproof-new", "deleted 4, kept 1 (not expired), left 2 (no expiry), 2 foreign untouched"}},
		{name: "dry run deletes nothing", dryRun: true, wantDeleted: 0,
			wantLeft: names(mix()),
			wantOut:  []string{"would delete  cluster scaleproof-old", "would delete 4,"}},
		{name: "a failed delete goes on", failDelete: map[string]error{"cluster scaleproof-old": errors.New("boom")}, wantDeleted: 3,
			wantLeft: []string{"node pool scaleproof", "cluster scaleproof-old", "cluster scaleproof-new", "cluster prod", "cluster lookalike", "cluster scaleproof-noexp", "repository scaleproof-badexp"},
			wantErr:  "delete cluster scaleproof-old: boom", wantOut: []string{"FAILED        cluster scaleproof-old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &cloudfake.Provider{FailDelete: tc.failDelete}
			p.Add(mix()...)
			var out bytes.Buffer
			res, err := Run(context.Background(), Config{Provider: p, DryRun: tc.dryRun, Now: func() time.Time { return now }, Out: &out})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
			if res.Deleted != tc.wantDeleted {
				t.Errorf("deleted %d, want %d", res.Deleted, tc.wantDeleted)
			}
			left := names(p.Resources())
			slices.Sort(left)
			want := slices.Clone(tc.wantLeft)
			slices.Sort(want)
			if !slices.Equal(left, want) {
				t.Errorf("left %v\nwant %v", left, want)
			}
			for _, c := range p.Calls() {
				for _, foreign := range []string{"prod", "lookalike", "noexp", "badexp", "scaleproof-new"} {
					if strings.HasPrefix(c, "delete") && strings.HasSuffix(c, foreign) {
						t.Errorf("touched %q", c)
					}
				}
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			if strings.Contains(out.String(), "prod") {
				t.Errorf("a foreign resource is listed by name:\n%s", out.String())
			}
		})
	}
}

func names(rs []cloud.Resource) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}
