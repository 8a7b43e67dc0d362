package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/kind/kedaimage"
)

func newKEDAImagesCmd() *cobra.Command {
	var cacheDir string
	var printRefs bool
	var nice int
	var only []string
	c := &cobra.Command{
		Use:   "keda-images",
		Short: "Build the images of KEDA " + kedaimage.Version + " (operator, metrics API server, webhooks), Prometheus and metrics-server " + kedaimage.MetricsServerVersion + " offline, unless the cache has them",
		Long: `keda-images makes sure --cache-dir holds docker-archive images (what
kind load image-archive takes) of KEDA's operator, metrics API server and
admission webhooks, built static from the Go module ` + kedaimage.Module + `@` + kedaimage.Version + `
with the go on PATH; of metrics-server (what the cluster's own
HorizontalPodAutoscaler reads CPU utilisation from), built the same way from
` + kedaimage.MetricsServerModule + `@` + kedaimage.MetricsServerVersion + `; and of Debian's prometheus binary with
its loader and libc (make deps-prometheus). Each is tagged
scaleproof.local/<name>:<version>-<hash of its inputs> (module version, go
version, build flags; for Prometheus the sha256 of every file in it) and
never rebuilt while the cache holds an archive of that tag; each set has its
own tag, so one set's build never invalidates another's. Nothing is pulled.
Each step logs its time and has its own log file. The first build compiles
KEDA's whole module graph (every scaler's cloud SDK): tens of minutes on a
small machine; metrics-server's a few minutes; seconds when cached.
--only builds some sets: keda, prometheus, metrics-server.

It prints one line per image: NAME REF ARCHIVE. autoscaler/deploy/render.KEDA,
autoscaler/deploy/render.Prometheus and autoscaler/deploy/render.MetricsServer render the
manifests for those refs.`,
		Example: `  scaleproof kind keda-images
  scaleproof kind keda-images --cache-dir /ci/cache/kedaimage
  scaleproof kind keda-images --only metrics-server
  scaleproof kind keda-images --print-refs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
			o := kedaimage.Options{CacheDir: cacheDir, Nice: nice, Only: only, Log: log}
			if printRefs {
				in, err := kedaimage.KEDA(ctx, o)
				if err != nil {
					return withCode(exitInfra, err)
				}
				ms, err := kedaimage.MetricsServer(ctx, o)
				if err != nil {
					return withCode(exitInfra, err)
				}
				for _, b := range in.Binaries {
					fmt.Fprintln(cmd.OutOrStdout(), b.Name, in.Ref(b.Name))
				}
				fmt.Fprintln(cmd.OutOrStdout(), kedaimage.MetricsServerBinary.Name, ms.Ref(kedaimage.MetricsServerBinary.Name))
				return nil
			}
			res, err := kedaimage.Ensure(ctx, o)
			for _, s := range res.Steps {
				if s.Cached {
					log.Info("step", "name", s.Name, "cached", true)
				} else {
					log.Info("step", "name", s.Name, "seconds", s.Elapsed.Seconds())
				}
			}
			if err != nil {
				if ctx.Err() != nil {
					return withCode(exitInterrupted, err)
				}
				return withCode(exitInfra, err)
			}
			for _, im := range res.Images {
				log.Info("image ready", "name", im.Name, "ref", im.Ref, "cached", im.Cached, "mib", float64(im.Size)/(1<<20))
				fmt.Fprintln(cmd.OutOrStdout(), im.Name, im.Ref, im.Archive)
			}
			log.Info("keda images ready", "seconds", res.Elapsed.Seconds(), "logs", res.LogDir)
			return nil
		},
	}
	c.Flags().StringVar(&cacheDir, "cache-dir", "", "folder of the image archives, the build work and the step logs (default ~/.cache/scaleproof/kedaimage)")
	c.Flags().BoolVar(&printRefs, "print-refs", false, "print the KEDA and metrics-server images' refs and exit (nothing is built)")
	c.Flags().StringSliceVar(&only, "only", nil, "image sets to build: keda, prometheus, metrics-server (default all)")
	c.Flags().IntVar(&nice, "nice", 0, "run go build under nice -n N (the build is large; 19 on a shared machine)")
	return c
}
