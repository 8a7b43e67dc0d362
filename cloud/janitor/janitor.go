// Package janitor deletes every scaleproof resource of a cloud past its
// expiry, so that no cluster is left running by mistake: a run killed in
// the middle of its create, a Down that failed, a kept cluster forgotten.
// It considers only what carries cloud.LabelManagedBy = scaleproof (a
// foreign resource is never touched) and deletes what is past its
// cloud.LabelExpiresAt; one of ours without a readable expiry is reported
// and left.
//
// Plan is the pure decision over a List; Run lists, plans and deletes
// (or only prints, with DryRun).
package janitor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/scaleproof/scaleproof/cloud"
)

// Action is what the janitor does with one resource.
type Action string

// The actions.
const (
	Delete      Action = "delete"       // ours and expired
	WithCluster Action = "with cluster" // a node pool or node group whose cluster is deleted: it goes with it
	Keep        Action = "keep"         // ours, not expired yet
	Leave       Action = "leave"        // ours, but no readable expiry: reported, never deleted
	Foreign     Action = "foreign"      // not ours: never touched
)

// Item is the decision on one resource.
type Item struct {
	Resource cloud.Resource
	Action   Action
	// Why says it in the user's words ("expired 2h0m0s ago").
	Why string
	// Err is the delete's error (Run only).
	Err error
}

// kindOrder is the order kinds are deleted in: clusters first (their node
// pools with them: each provider's Delete of a cluster deletes what the
// cluster needs gone first), then node pools left without a cluster, then
// repositories, roles and resource groups (which may hold the others).
var kindOrder = map[string]int{"cluster": 0, "node pool": 1, "node group": 1, "repository": 2, "role": 3, "resource group": 4}

func rank(kind string) int {
	if r, ok := kindOrder[kind]; ok {
		return r
	}
	return 5
}

// isPool reports whether kind is a cluster's node pool (GKE, AKS) or node
// group (EKS).
func isPool(kind string) bool { return kind == "node pool" || kind == "node group" }

// Plan decides on every resource at now: the Delete items first, in
// deletion order (clusters, node pools, repositories, roles, resource
// groups; by name within a kind), then the rest in the same order. A node
// pool of ours that is expired and has the run id of a cluster being
// deleted is WithCluster (its cluster's Delete takes it).
func Plan(rs []cloud.Resource, now time.Time) []Item {
	doomed := map[string]bool{} // run ids of clusters being deleted
	items := make([]Item, 0, len(rs))
	for _, r := range rs {
		it := Item{Resource: r}
		switch exp, ok := r.ExpiresAt(); {
		case !r.Ours():
			it.Action, it.Why = Foreign, "not a scaleproof resource (no "+cloud.LabelManagedBy+"="+cloud.ManagedByValue+")"
		case !ok:
			it.Action = Leave
			if v, has := r.Labels[cloud.LabelExpiresAt]; has {
				it.Why = fmt.Sprintf("label %s=%q is not Unix seconds: left alone; delete it by hand if it is not in use", cloud.LabelExpiresAt, v)
			} else {
				it.Why = "no " + cloud.LabelExpiresAt + " label: left alone; delete it by hand if it is not in use"
			}
		case now.Before(exp):
			it.Action, it.Why = Keep, fmt.Sprintf("expires in %s (%s)", exp.Sub(now).Round(time.Second), exp.UTC().Format(time.RFC3339))
		default:
			it.Action, it.Why = Delete, fmt.Sprintf("expired %s ago (%s)", now.Sub(exp).Round(time.Second), exp.UTC().Format(time.RFC3339))
			if r.Kind == "cluster" {
				doomed[r.Labels[cloud.LabelRunID]] = true
			}
		}
		items = append(items, it)
	}
	for i := range items {
		it := &items[i]
		if it.Action == Delete && isPool(it.Resource.Kind) && doomed[it.Resource.Labels[cloud.LabelRunID]] {
			it.Action, it.Why = WithCluster, "deleted with its cluster; "+it.Why
		}
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if (a.Action == Delete) != (b.Action == Delete) {
			return a.Action == Delete
		}
		if rank(a.Resource.Kind) != rank(b.Resource.Kind) {
			return rank(a.Resource.Kind) < rank(b.Resource.Kind)
		}
		return a.Resource.Name < b.Resource.Name
	})
	return items
}

// Config configures Run.
type Config struct {
	Provider cloud.Provider
	// DryRun lists what would be deleted and deletes nothing.
	DryRun bool
	Now    func() time.Time // nil: time.Now
	Out    io.Writer        // one line a resource; nil: discard
}

// Result is what Run did.
type Result struct {
	Items   []Item
	Deleted int // resources deleted (0 with DryRun)
}

// Run lists the provider's resources, plans, and deletes every Delete item
// in order (unless DryRun), going on past a failed delete. The error joins
// the List error or every failed delete.
func Run(ctx context.Context, cfg Config) (Result, error) {
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	rs, err := cfg.Provider.List(ctx)
	if err != nil {
		return Result{}, err
	}
	res := Result{Items: Plan(rs, now())}
	var errs []error
	counts := map[Action]int{}
	for i := range res.Items {
		it := &res.Items[i]
		counts[it.Action]++
		switch it.Action {
		case Foreign:
			continue // never touched, never listed one by one
		case Delete:
			if cfg.DryRun {
				fmt.Fprintf(out, "would delete  %-40s %s\n", it.Resource, it.Why)
				continue
			}
			if err := cfg.Provider.Delete(ctx, it.Resource); err != nil {
				it.Err = err
				errs = append(errs, fmt.Errorf("delete %s: %w", it.Resource, err))
				fmt.Fprintf(out, "FAILED        %-40s %v\n", it.Resource, err)
				continue
			}
			res.Deleted++
			fmt.Fprintf(out, "deleted       %-40s %s\n", it.Resource, it.Why)
		case WithCluster:
			fmt.Fprintf(out, "%-13s %-40s %s\n", "with cluster", it.Resource, it.Why)
		case Keep:
			fmt.Fprintf(out, "keep          %-40s %s\n", it.Resource, it.Why)
		case Leave:
			fmt.Fprintf(out, "LEFT          %-40s %s\n", it.Resource, it.Why)
		}
	}
	verb := "deleted"
	n := res.Deleted
	if cfg.DryRun {
		verb, n = "would delete", counts[Delete]
	}
	fmt.Fprintf(out, "%s: %s %d, kept %d (not expired), left %d (no expiry), %d foreign untouched\n",
		cfg.Provider.Name(), verb, n, counts[Keep], counts[Leave], counts[Foreign])
	return res, errors.Join(errs...)
}
