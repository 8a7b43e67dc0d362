package deployer

import "context"

// IsUp reports whether a cluster was created or adopted and the deployed
// system answers.
func (d *Deployer) IsUp(ctx context.Context) (bool, error) {
	d.mu.Lock()
	c, dep, down := d.cluster, d.deployed, d.downDone
	d.mu.Unlock()
	if c == nil || dep == nil || down {
		return false, nil
	}
	return dep.IsUp(ctx)
}
