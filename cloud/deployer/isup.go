package deployer

import "context"

// IsUp reports whether a cluster was created or adopted and Down has not
// run.
func (d *Deployer) IsUp(context.Context) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cluster != nil && !d.downDone, nil
}
