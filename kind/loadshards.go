package kind

import (
	"context"
	"errors"

	"github.com/scaleproof/scaleproof/scenarios/platform"
)

var _ platform.LoadSharder = (*Kind)(nil)

// errNotDeployed is the LoadSharder error before the system is deployed.
var errNotDeployed = errors.New("kind: load shards: the system is not deployed yet")

// sharder is the deployed platform's LoadSharder (the kubeconfig platform).
func (k *Kind) sharder() (platform.LoadSharder, error) {
	k.mu.Lock()
	d := k.deployed
	k.mu.Unlock()
	if d == nil {
		return nil, errNotDeployed
	}
	s, ok := d.(platform.LoadSharder)
	if !ok {
		return nil, errors.New("kind: load shards: the deployed platform cannot run load shards")
	}
	return s, nil
}

// ShardEdgeURL is the deployed platform's (the edge Service inside the
// cluster).
func (k *Kind) ShardEdgeURL(ctx context.Context) (string, error) {
	s, err := k.sharder()
	if err != nil {
		return "", err
	}
	return s.ShardEdgeURL(ctx)
}

// RunLoadShards runs the load as an Indexed Job on the kind cluster, with
// the image Up loaded into the node (it holds the scaleproof binary).
func (k *Kind) RunLoadShards(ctx context.Context, job platform.ShardJob) ([]platform.ShardOutput, error) {
	s, err := k.sharder()
	if err != nil {
		return nil, err
	}
	return s.RunLoadShards(ctx, job)
}
