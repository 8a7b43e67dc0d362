package main

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestKubeFlags: the Kubernetes flags of console and edge (and the worker's
// CPU cost) are checked before anything is contacted; a bad one is a usage error.
func TestKubeFlags(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"console kube without namespace", []string{"console", "--keys", "k.json", "--scale-target", "kube"}, "--namespace is required"},
		{"console kube with --state", []string{"console", "--keys", "k.json", "--scale-target", "kube", "--namespace", "sp", "--state", "x.db"}, "--state-configmap"},
		{"console unknown target", []string{"console", "--keys", "k.json", "--scale-target", "nomad"}, "want fleet or kube"},
		{"console kube bad sweep", []string{"console", "--keys", "k.json", "--scale-target", "kube", "--namespace", "sp", "--hpa-sweep", "0s"}, "--hpa-sweep"},
		{"console fleet without state", []string{"console", "--keys", "k.json", "--fleet", "http://127.0.0.1:1"}, "--state is required"},
		{"worker negative cpu", []string{"worker", "--cpu-per-call", "-5"}, "--cpu-per-call -5"},
		{"worker cpu over a core", []string{"worker", "--cpu-per-call", "1500"}, "want 0..1000 millicores"},
		{"edge kube without namespace", []string{"edge", "--discovery", "kube"}, "--namespace is required"},
		{"edge kube with fleet", []string{"edge", "--discovery", "kube", "--namespace", "sp", "--fleet", "http://127.0.0.1:1"}, "--fleet is for --discovery fleet"},
		{"edge unknown discovery", []string{"edge", "--discovery", "consul"}, "want fleet or kube"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cmd = newConsoleCmd()
			switch tc.args[0] {
			case "edge":
				cmd = newEdgeCmd()
			case "worker":
				cmd = newWorkerCmd()
			}
			cmd.SetArgs(tc.args[1:])
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.Execute()
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a usage error naming %q", err, tc.want)
			}
		})
	}
}
