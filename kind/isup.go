package kind

import (
	"context"
	"slices"
)

// IsUp reports whether the cluster exists and the deployed system answers.
func (k *Kind) IsUp(ctx context.Context) (bool, error) {
	k.mu.Lock()
	created, dep := k.created, k.deployed
	var api clusters
	if created {
		api = k.api()
	}
	k.mu.Unlock()
	if !created {
		return false, nil
	}
	names, err := api.List()
	if err != nil {
		return false, err
	}
	if !slices.Contains(names, k.name) {
		return false, nil
	}
	if dep == nil {
		return true, nil
	}
	return dep.IsUp(ctx)
}
