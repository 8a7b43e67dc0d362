package kind

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kind/pkg/apis/config/defaults"

	"github.com/scaleproof/scaleproof/kind/nodeimage"
)

// Up picks the engine, makes sure the node image is there, creates the
// cluster (kubeconfig into the artifacts), keeps its Service range
// inside it (ConfineRules), loads the images and hands the cluster over.
// Whatever it made is deleted by Down, also after a failed Up.
func (k *Kind) Up(ctx context.Context) (Cluster, error) {
	if k.cfg.Artifacts == "" {
		return Cluster{}, errors.New("kind: an artifacts folder is needed (kubeconfig and logs go there)")
	}
	if err := os.MkdirAll(k.cfg.Artifacts, 0o755); err != nil {
		return Cluster{}, err
	}
	if err := k.step("choose provider", func() error {
		e, err := ChooseEngine(ctx, k.cfg.Provider, k.cfg.Prober)
		if err != nil {
			return err
		}
		k.mu.Lock()
		k.engine = e
		if k.provider == nil {
			k.provider = providerFor(e, k.cfg.Log)
		}
		k.mu.Unlock()
		fmt.Fprintf(k.cfg.Out, "kind: provider %s: %s\n", e.Name, e.Why)
		k.cfg.Log.Info("kind provider", "engine", e.Name, "why", e.Why)
		return nil
	}); err != nil {
		return Cluster{}, err
	}

	var image string
	if err := k.step("node image", func() error {
		var err error
		image, err = k.nodeImage(ctx)
		if err == nil {
			fmt.Fprintf(k.cfg.Out, "kind: node image %s\n", image)
		}
		return err
	}); err != nil {
		return Cluster{}, err
	}

	hostPorts, err := freeHostPorts(k.cfg.NodePorts)
	if err != nil {
		return Cluster{}, err
	}
	cc := ClusterConfig(ClusterConfigOptions{Name: k.name, Image: image, StaticCNI: StaticCNI(image), HostPorts: hostPorts})
	if b, err := RenderClusterConfig(cc); err == nil {
		_ = os.WriteFile(filepath.Join(k.cfg.Artifacts, "kind-config.yaml"), b, 0o644)
	}
	k.mu.Lock()
	k.hostPorts = hostPorts
	k.created = true // from here on Down deletes, even when create fails half-way
	api := k.api()
	k.mu.Unlock()
	if err := k.step("create cluster", func() error {
		if err := api.Create(k.name, cc, k.kubeconfig); err != nil {
			return fmt.Errorf("kind create cluster %s (%s, image %s): %w", k.name, k.engine.Name, image, err)
		}
		return nil
	}); err != nil {
		return Cluster{}, err
	}
	if err := ctx.Err(); err != nil {
		return Cluster{}, err
	}
	if err := k.step("confine", func() error {
		return api.Confine(k.name, []string{ServiceSubnet})
	}); err != nil {
		return Cluster{}, err
	}

	if k.cfg.Images != nil {
		if err := k.step("load images", func() error {
			archives, err := k.cfg.Images(ctx)
			if err != nil {
				return err
			}
			for _, a := range archives {
				if err := api.LoadImageArchive(k.name, a); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return Cluster{}, err
		}
	}
	return Cluster{Name: k.name, Kubeconfig: k.kubeconfig, NodeHost: "127.0.0.1", HostPorts: hostPorts}, nil
}

// StaticCNI reports whether image is one of ours (static CNI config in the
// node; kind's kindnetd is turned off) rather than kind's published image.
func StaticCNI(image string) bool { return strings.HasPrefix(image, nodeimage.Repository+":") }

// nodeImage resolves the node image: the one asked for; else kind's
// published image when the engine is Docker and has it; else ours,
// built (or loaded from the cache archive) when missing.
func (k *Kind) nodeImage(ctx context.Context) (string, error) {
	if k.cfg.NodeImage != "" {
		return k.cfg.NodeImage, nil
	}
	if k.engine.Name == "docker" && exec.CommandContext(ctx, "docker", "image", "inspect", defaults.Image).Run() == nil {
		return defaults.Image, nil
	}
	if k.cfg.EnsureNodeImage != nil {
		return k.cfg.EnsureNodeImage(ctx, k.engine.Name)
	}
	// the build's steps go to the progress output too: a cold build takes minutes
	both := slog.New(slog.NewMultiHandler(k.cfg.Log.Handler(), slog.NewTextHandler(k.cfg.Out, nil)))
	return EnsureNodeImage(ctx, k.engine.Name, nodeimage.Options{Log: both})
}

// EnsureNodeImage builds (or loads) our node image with o and, for Docker,
// copies it from podman's store into Docker's when Docker lacks it.
func EnsureNodeImage(ctx context.Context, engine string, o nodeimage.Options) (string, error) {
	b, err := nodeimage.New(ctx, o)
	if err != nil {
		return "", err
	}
	res, err := b.Ensure(ctx)
	if err != nil {
		return "", err
	}
	if engine == "docker" && exec.CommandContext(ctx, "docker", "image", "inspect", res.Tag).Run() != nil {
		if err := nodeimage.CopyToDocker(ctx, os.Stderr, "podman", res.Tag); err != nil {
			return "", err
		}
	}
	return res.Tag, nil
}

// api is the cluster lifecycle in use (k.mu held).
func (k *Kind) api() clusters {
	if k.testAPI != nil {
		return k.testAPI
	}
	return kindClusters{p: k.provider}
}

// createdAPI is the cluster lifecycle in use, or nil while Up has not
// created the cluster.
func (k *Kind) createdAPI() clusters {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.created {
		return nil
	}
	return k.api()
}
