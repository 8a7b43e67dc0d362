package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/scaleproof/scaleproof/deploy/image"
	deploykube "github.com/scaleproof/scaleproof/deploy/kube"
	"github.com/scaleproof/scaleproof/kind"
	"github.com/scaleproof/scaleproof/reports"
	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/platform/kubeconfig"
)

// kindNodePorts are the NodePorts the kind config maps to 127.0.0.1: the
// edge's and the console's.
var kindNodePorts = []int{deploykube.EdgeNodePort, deploykube.ConsoleNodePort}

// kindOpts are run's kind platform flags.
type kindOpts struct {
	keep      bool
	nodeImage string
	provider  string
}

func addKindFlags(f *pflag.FlagSet, o *kindOpts) {
	f.BoolVar(&o.keep, "keep", false, "kind: leave the cluster up after the run (its kubeconfig is in the artifacts folder)")
	f.StringVar(&o.nodeImage, "kind-node-image", "", "kind: node image (default: kind's published image when Docker has it, else ours, built once and cached)")
	f.StringVar(&o.provider, "kind-provider", "auto", "kind: container engine: auto (Docker only when a privileged container starts there, else podman), docker or podman")
}

// kindDeploy is the deploy step of the kind platform: the kubeconfig
// platform on the cluster's kubeconfig, the NodePorts reached on 127.0.0.1
// at the host ports kind mapped, the image Images loaded.
func kindDeploy(o *runOpts, prof scenarios.Profile, runID string, ref *refImage, log *slog.Logger) kind.DeployFunc {
	return func(ctx context.Context, c kind.Cluster) (platform.Platform, error) {
		if ref.ref == "" {
			return nil, errors.New("kind: deploy before the scaleproof-ref image was loaded")
		}
		name := o.name
		if name == "" {
			name = "kind"
		}
		return kubeconfig.New(kubeconfig.Config{Name: name, Kubeconfig: c.Kubeconfig,
			Namespace: runNamespace(runID), Profile: prof.Name, Image: ref.ref, Group: o.group,
			NodeHost: c.NodeHost, ConsoleHostPort: c.HostPorts[deploykube.ConsoleNodePort], EdgeHostPort: c.HostPorts[deploykube.EdgeNodePort],
			Canary: o.canary, Log: log})
	}
}

// refImage is the image of scaleproof-ref (the console, edge and worker)
// the kind node gets: the binary beside scaleproof (or --ref-bin) on an
// empty base, with this scaleproof binary beside it at /scaleproof (the
// load shards' command) when it is static, tagged by their content hash,
// written into the artifacts. needSelf makes a scaleproof that is not
// static an error (--load-shards needs it in the image).
type refImage struct {
	bin, dir string
	needSelf bool
	noSelf   bool // the cloud platforms: no load shards, so no scaleproof in the image (a smaller push)
	log      *slog.Logger
	ref      string
}

func (r *refImage) archives(context.Context) ([]string, error) {
	path, err := findRefBin(r.bin)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var extra []image.File
	self, err := selfBinary()
	switch {
	case r.noSelf:
	case err == nil:
		extra = append(extra, image.File{Path: image.ScaleproofPath, Body: self})
	case r.needSelf:
		return nil, fmt.Errorf("--load-shards: the image needs this scaleproof binary: %w", err)
	case r.log != nil:
		r.log.Info("image without scaleproof (no load shards possible)", "why", err)
	}
	bins := [][]byte{b}
	for _, x := range extra {
		bins = append(bins, x.Body)
	}
	if r.ref, err = image.Tag("", bins...); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, err
	}
	out := filepath.Join(r.dir, "scaleproof-ref.tar")
	if err := image.Write(out, r.ref, b, extra...); err != nil {
		return nil, err
	}
	return []string{out}, nil
}

// selfBinary is this scaleproof binary, when it is static (it runs on the
// image's empty base).
func selfBinary() ([]byte, error) {
	p, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if err := image.CheckStatic(b); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return b, nil
}

func newKindPlatform(o *runOpts, prof scenarios.Profile, runID, dir string, log *slog.Logger, out io.Writer) (*kind.Kind, error) {
	cfg := kind.Config{
		RunID: runID, Provider: o.kind.provider, NodeImage: o.kind.nodeImage, Keep: o.kind.keep,
		Artifacts: dir, NodePorts: kindNodePorts, Log: log, Out: out,
	}
	ref := &refImage{bin: o.refBin, dir: filepath.Join(dir, "images"), needSelf: o.loadShards > 1, log: log}
	cfg.Images = ref.archives
	cfg.Deploy = kindDeploy(o, prof, runID, ref, log)
	return kind.New(cfg)
}

// kindSteps turns the kind platform's steps into JUnit steps of the run.
func kindSteps(k *kind.Kind) []reports.Step {
	var out []reports.Step
	for _, s := range k.Steps() {
		out = append(out, reports.Step{Name: "kind: " + s.Name, Duration: s.Duration, Err: s.Err})
	}
	return out
}

func kindOut(cmd interface{ ErrOrStderr() io.Writer }, quiet bool) io.Writer {
	if quiet {
		return io.Discard
	}
	return cmd.ErrOrStderr()
}
