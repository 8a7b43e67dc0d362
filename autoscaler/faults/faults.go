// Package faults is the reference system's catalogue of planted bugs: fault
// switches that make the reference console, controller, edge or worker
// break one rule of the autoscaling contract on purpose, so that
// `scaleproof selftest` can prove the harness's verdicts catch each one.
//
// A fault is switched on with the servers' --fault flag (a comma-separated
// list of names from Catalog). Faults are off by default and are used only by
// `scaleproof selftest` and tests; `scaleproof run` never sets one.
//
// This package is a leaf: it imports nothing of the project, so the
// reference servers, the local platform and the self-test can all share the
// one list of names.
package faults

import (
	"fmt"
	"sort"
	"strings"
)

// Fault is one planted bug.
type Fault struct {
	// Name is the --fault value, kebab-case ("ignore-up-cooldown").
	Name string
	// Component is the server that carries it: "console", "edge" or "worker".
	Component string
	// Rule is the contract rule it breaks, in the user's words
	// ("no step up within the up cooldown of the last change").
	Rule string
	// Doc says what the faulty system does instead.
	Doc string
	// Scenarios are the scenarios the self-test runs against this fault
	// (the ones whose facts are expected to catch it).
	Scenarios []string
	// Policy is the policy the self-test creates the scenarios' zones with
	// for this fault: "" (the step policy) or PolicyHPA (needs Prometheus).
	Policy string
	// Canary: the self-test runs this fault's scenarios with a canary
	// worker beside each zone's workers (as `scaleproof run --canary`).
	Canary bool
}

// PolicyHPA is Fault.Policy of a fault of the hpa policy: its scenarios run
// with --policy hpa.
const PolicyHPA = "hpa"

// The servers a fault can live in (Fault.Component).
const (
	ComponentConsole = "console"
	ComponentEdge    = "edge"
	ComponentWorker  = "worker"
)

// Catalog lists every fault, in the self-test's order: the files of this
// package append their lists in init (console.go, outage.go).
var Catalog = []Fault{}

// Lookup returns the fault named name.
func Lookup(name string) (Fault, bool) {
	for _, f := range Catalog {
		if f.Name == name {
			return f, true
		}
	}
	return Fault{}, false
}

// Set is a set of switched-on faults. The zero value (nil) has none on, and
// every method is safe on it.
type Set map[string]bool

// Parse reads a --fault value: names separated by commas, blanks ignored.
// An unknown name is an error naming the known ones.
func Parse(s string) (Set, error) {
	out := Set{}
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if _, ok := Lookup(n); !ok {
			var have []string
			for _, f := range Catalog {
				have = append(have, f.Name)
			}
			sort.Strings(have)
			return nil, fmt.Errorf("unknown fault %q (known: %s)", n, strings.Join(have, ", "))
		}
		out[n] = true
	}
	return out, nil
}

// On reports whether fault name is switched on.
func (s Set) On(name string) bool { return s[name] }

// String renders the set as a --fault value (sorted names, comma-separated).
func (s Set) String() string {
	var names []string
	for n, on := range s {
		if on {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// For returns the faults of s that component carries (a Set for that
// server's --fault flag); nil when none.
func (s Set) For(component string) Set {
	var out Set
	for n, on := range s {
		if f, ok := Lookup(n); ok && on && f.Component == component {
			if out == nil {
				out = Set{}
			}
			out[n] = true
		}
	}
	return out
}
