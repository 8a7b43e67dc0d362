package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/scenarios"
)

func TestKindFlags(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--platform", "kind"}, ""},
		{[]string{"--platform", "kind", "--kind-provider", "podman", "--keep", "--kind-node-image", "localhost/x:1"}, ""},
		{[]string{"--platform", "kind", "--kind-provider", "lxc"}, "want auto, docker or podman"},
	} {
		cmd := newRunCmd()
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		o := &runOpts{}
		o.kind.provider, _ = cmd.Flags().GetString("kind-provider")
		o.kind.keep, _ = cmd.Flags().GetBool("keep")
		o.kind.nodeImage, _ = cmd.Flags().GetString("kind-node-image")
		k, err := newKindPlatform(o, scenarios.Quick(), "20261201-000000-abcdef", t.TempDir(), log, io.Discard)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: err %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if k.Name() != "kind" || k.ClusterName() != "scaleproof-20261201-000000-abcdef" || !strings.HasSuffix(k.Kubeconfig(), "/kubeconfig") {
			t.Errorf("%v: name %s cluster %s kubeconfig %s", tc.args, k.Name(), k.ClusterName(), k.Kubeconfig())
		}
		if len(kindSteps(k)) != 0 {
			t.Errorf("steps before Up")
		}
	}
}
