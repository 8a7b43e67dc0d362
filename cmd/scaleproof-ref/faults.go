package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/scaleproof/scaleproof/autoscaler/faults"
)

// addFaultFlag adds --fault to a server's flags: the planted bugs of
// component (autoscaler/faults) to switch on, for `scaleproof selftest` and
// tests only.
func addFaultFlag(f *pflag.FlagSet, dst *string, component string) {
	var names []string
	for _, x := range faults.Catalog {
		if x.Component == component {
			names = append(names, x.Name)
		}
	}
	help := "none"
	if len(names) > 0 {
		help = strings.Join(names, ", ")
	}
	f.StringVar(dst, "fault", "", "comma-separated planted bugs to switch on, for the self-test only (never in a real run): "+help)
}

// parseFaults reads a --fault value and checks every fault belongs to component.
func parseFaults(v, component string) (faults.Set, error) {
	set, err := faults.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("--fault: %w", err)
	}
	for n := range set {
		if f, _ := faults.Lookup(n); f.Component != component {
			return nil, fmt.Errorf("--fault %s: it is a fault of the %s, not of the %s", n, f.Component, component)
		}
	}
	return set, nil
}
