package kind

import (
	"context"
	"slices"
)

// IsUp reports whether the cluster exists.
func (k *Kind) IsUp(ctx context.Context) (bool, error) {
	k.mu.Lock()
	created := k.created
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
	return slices.Contains(names, k.name), nil
}
