package kind

import (
	"context"
	"errors"
	"testing"

	"github.com/scaleproof/scaleproof/scenarios/platform"
)

func TestLoadShardsBeforeDeploy(t *testing.T) {
	k, err := New(Config{RunID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.RunLoadShards(context.Background(), platform.ShardJob{}); !errors.Is(err, errNotDeployed) {
		t.Errorf("RunLoadShards before Up: %v, want errNotDeployed", err)
	}
	if _, err := k.ShardEdgeURL(context.Background()); !errors.Is(err, errNotDeployed) {
		t.Errorf("ShardEdgeURL before Up: %v, want errNotDeployed", err)
	}
}
