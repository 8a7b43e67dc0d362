package deployer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/scaleproof/scaleproof/cloud"
)

// Up refuses without a TTL (ErrNoTTL), then: creates the cluster labelled
// with the run id and expiry (or adopts Options.Cluster), makes sure the
// image repository exists, pushes the image, writes the kubeconfig and
// starts the token refresh, and hands the cluster over. Whatever it created is deleted by
// Down, also after a failed Up: the cluster is recorded as soon as Create
// returns, with or without an error.
func (d *Deployer) Up(ctx context.Context) (Handoff, error) {
	o := d.cfg.Options
	if o.TTL <= 0 {
		return Handoff{}, ErrNoTTL
	}
	// The token and the kubeconfig that reads it are secrets: they go to a
	// private folder (0700) outside the artifacts, which the nightly uploads,
	// and Down removes it.
	dir, err := os.MkdirTemp("", "scaleproof-cloud-")
	if err != nil {
		return Handoff{}, fmt.Errorf("cloud platform: private folder for the credentials: %w", err)
	}
	d.mu.Lock()
	d.secretDir = dir
	d.mu.Unlock()
	labels := cloud.Labels(o.RunID, d.now(), o.TTL)
	p := d.cfg.Provider

	var c cloud.Cluster
	if o.Cluster != "" {
		if err := d.step("adopt cluster "+o.Cluster, func() error {
			var err error
			c, err = p.Adopt(ctx, o.Cluster)
			c.Adopted, c.Created = true, nil // never deleted, whatever the provider said
			if err != nil {
				return err
			}
			d.setCluster(c)
			return nil
		}); err != nil {
			return Handoff{}, err
		}
	} else {
		name := cloud.ClusterName(o.RunID)
		if err := d.step("create cluster "+name, func() error {
			var err error
			c, err = p.Create(ctx, name, labels)
			c.Adopted = false
			d.setCluster(c) // even on error: Created lists what exists
			return err
		}); err != nil {
			return Handoff{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return Handoff{}, err
	}

	var reg cloud.Registry
	if err := d.step("ensure registry", func() error {
		var err error
		reg, err = p.EnsureRegistry(ctx, labels)
		d.mu.Lock()
		d.registry = &reg
		d.mu.Unlock()
		return err
	}); err != nil {
		return Handoff{}, err
	}

	var ref string
	if err := d.step("push image", func() error {
		var err error
		ref, err = push(ctx, d.cfg.Image, reg)
		if err == nil {
			fmt.Fprintf(d.out, "%s: pushed %s\n", d.Name(), ref)
		}
		return err
	}); err != nil {
		return Handoff{}, err
	}

	h := Handoff{Cluster: c, Kubeconfig: filepath.Join(dir, "kubeconfig"), TokenFile: filepath.Join(dir, "token"), Image: ref}
	if err := d.step("credentials", func() error {
		return d.credentials(ctx, h)
	}); err != nil {
		return Handoff{}, err
	}
	return h, nil
}

func (d *Deployer) setCluster(c cloud.Cluster) {
	d.mu.Lock()
	d.cluster = &c
	d.mu.Unlock()
}
