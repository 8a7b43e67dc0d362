package kind

import (
	"context"
	"slices"
)

// IsUp reports whether the cluster exists.
func (k *Kind) IsUp(ctx context.Context) (bool, error) {
	api := k.createdAPI()
	if api == nil {
		return false, nil
	}
	names, err := api.List()
	if err != nil {
		return false, err
	}
	return slices.Contains(names, k.name), nil
}
