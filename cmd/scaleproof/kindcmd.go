package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/kind"
	"github.com/scaleproof/scaleproof/kind/hostsetup"
	"github.com/scaleproof/scaleproof/kind/nodeimage"
)

func newKindCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "kind",
		Short: "kind on this host: host setup, the offline node image, the KEDA and Prometheus images, deleting a kept cluster",
	}
	c.AddCommand(newNodeImageCmd(), newKEDAImagesCmd(), newHostSetupCmd(), newKindDeleteCmd())
	return c
}

type nodeImageOpts struct {
	cacheDir, workDir, mirror string
	noArchive, printTag       bool
	rebuild                   bool
	save, load                string
}

func newNodeImageCmd() *cobra.Command {
	o := &nodeImageOpts{}
	c := &cobra.Command{
		Use:   "node-image",
		Short: "Build the kind node image offline (Kubernetes " + nodeimage.Default.Kubernetes + "), unless podman already has it",
		Long: `node-image makes sure podman's image store has the kind node image
localhost/scaleproof/kind-node:<kubernetes version>-<hash of every input>.

When the store has it, nothing is done. Else, when --cache-dir holds its
zstd archive, that is loaded (CI caches). Else it is built: every binary
from the Go module proxy (Kubernetes, containerd, runc, CNI plugins,
crictl, etcd, CoreDNS; pause with gcc), the root filesystem of Debian
bookworm with debootstrap, the component images written with
go-containerregistry and preloaded into the node's containerd, then
imported into podman and tagged last. Each step logs its time and has its
own log file; a failed step names itself and its log. About 16 minutes of
Go builds from a cold cache, about 1.5 minutes more; seconds when cached.`,
		Example: `  scaleproof kind node-image
  scaleproof kind node-image --print-tag
  scaleproof kind node-image --cache-dir /ci/cache
  scaleproof kind node-image --save /tmp/node.tar.zst`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runNodeImage(cmd, o) },
	}
	f := c.Flags()
	f.StringVar(&o.cacheDir, "cache-dir", "", "folder of the compressed image archives (default ~/.cache/scaleproof)")
	f.StringVar(&o.workDir, "work-dir", "", "folder of build outputs and step logs (default ~/.cache/scaleproof/nodeimage)")
	f.StringVar(&o.mirror, "mirror", "", "Debian mirror for debootstrap (default: the one apt uses)")
	f.BoolVar(&o.noArchive, "no-archive", false, "do not write the compressed archive after a build")
	f.BoolVar(&o.printTag, "print-tag", false, "print the image tag and exit (nothing is built)")
	f.BoolVar(&o.rebuild, "rebuild", false, "build even when the store has the image (the tag moves only when the build succeeds)")
	f.StringVar(&o.save, "save", "", "after ensuring the image, also save it as a zstd archive to this path")
	f.StringVar(&o.load, "load", "", "load the image from this zstd archive instead of building")
	return c
}

func runNodeImage(cmd *cobra.Command, o *nodeImageOpts) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	b, err := nodeimage.New(ctx, nodeimage.Options{CacheDir: o.cacheDir, WorkDir: o.workDir, Mirror: o.mirror, NoArchive: o.noArchive, Log: log})
	if err != nil {
		return withCode(exitInfra, err)
	}
	if o.printTag {
		fmt.Fprintln(cmd.OutOrStdout(), b.Tag())
		return nil
	}
	if o.load != "" {
		if err := nodeimage.LoadArchive(ctx, cmd.ErrOrStderr(), "podman", b.Tag(), o.load); err != nil {
			return withCode(exitInfra, err)
		}
		fmt.Fprintln(cmd.OutOrStdout(), b.Tag())
		return nil
	}
	var res nodeimage.Result
	if o.rebuild {
		res, err = b.Build(ctx)
	} else {
		res, err = b.Ensure(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return withCode(exitInterrupted, err)
		}
		return withCode(exitInfra, err)
	}
	for _, s := range res.Steps {
		if s.Cached {
			log.Info("step", "name", s.Name, "cached", true)
		} else {
			log.Info("step", "name", s.Name, "seconds", s.Elapsed.Seconds())
		}
	}
	log.Info("node image ready", "tag", res.Tag, "how", res.How, "seconds", res.Elapsed.Seconds(), "archive", res.Archive)
	if o.save != "" {
		if err := nodeimage.SaveArchive(context.WithoutCancel(ctx), cmd.ErrOrStderr(), "podman", res.Tag, o.save); err != nil {
			return withCode(exitInfra, err)
		}
	}
	fmt.Fprintln(cmd.OutOrStdout(), res.Tag)
	return nil
}

func newHostSetupCmd() *cobra.Command {
	var skipApt bool
	c := &cobra.Command{
		Use:   "host-setup",
		Short: "Prepare this Debian host for kind's podman provider (what make deps-kind runs; needs root; idempotent)",
		Long: `host-setup installs from Debian what the podman path needs (podman crun runc
debootstrap libseccomp-dev pkg-config jq zstd gcc tar), writes
/etc/containers/containers.conf (runtime runc; default ulimits nofile and
nproc from this shell's own hard limits, nproc at most 32768), and makes
/lib/modules, which kind always bind-mounts. Nothing is changed that is
already right; a containers.conf not written here is kept beside it as
containers.conf.before-scaleproof.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := hostsetup.Apply(cmd.Context(), hostsetup.Options{SkipApt: skipApt, Out: cmd.ErrOrStderr()}); err != nil {
				return withCode(exitInfra, err)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&skipApt, "skip-apt", false, "do not install packages")
	return c
}

func newKindDeleteCmd() *cobra.Command {
	var provider, kubeconfig string
	c := &cobra.Command{
		Use:     "delete NAME",
		Short:   "Delete a kind cluster a run left with --keep",
		Example: "  scaleproof kind delete scaleproof-20261201-093000-a1b2c3 --kubeconfig _artifacts/20261201-093000-a1b2c3/kubeconfig",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return withCode(exitUsage, fmt.Errorf("kind delete takes one cluster name (the name a run printed with --keep, e.g. scaleproof-<run id>); got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := kind.DeleteCluster(cmd.Context(), provider, args[0], kubeconfig); err != nil {
				return withCode(exitInfra, err)
			}
			return nil
		},
	}
	c.Flags().StringVar(&provider, "kind-provider", "auto", "container engine: auto, docker or podman")
	c.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig whose context for the cluster is removed")
	return c
}
