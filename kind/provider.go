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
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
)

// Engine is the container engine kind runs its node in, and why it was chosen.
type Engine struct {
	Name string // "docker" or "podman"
	Why  string
}

// Prober tells whether an engine can run kind's node: Docker must start a
// privileged container (Docker 20.10 on some hosts fails them with "unable
// to apply caps: operation not permitted"); podman must answer.
type Prober interface {
	DockerPrivileged(ctx context.Context) error
	Podman(ctx context.Context) error
}

// ErrNoEngine is returned (wrapped, with each engine's error) when neither
// engine can run kind.
var ErrNoEngine = errors.New("no container engine can run kind")

// InstallHint says what to install when no engine works.
const InstallHint = "install podman (Debian: `make deps-kind`, which runs `apt-get install podman crun runc` and writes podman's defaults), or use a Docker that allows privileged containers"

// ChooseEngine picks the engine for want (auto, docker or podman). auto
// picks Docker only when a privileged container actually starts there,
// else podman.
func ChooseEngine(ctx context.Context, want string, p Prober) (Engine, error) {
	switch want {
	case "docker":
		if err := p.DockerPrivileged(ctx); err != nil {
			return Engine{}, fmt.Errorf("%w: --kind-provider docker: %v; %s", ErrNoEngine, err, InstallHint)
		}
		return Engine{Name: "docker", Why: "asked for with --kind-provider docker; a privileged container started"}, nil
	case "podman":
		if err := p.Podman(ctx); err != nil {
			return Engine{}, fmt.Errorf("%w: --kind-provider podman: %v; %s", ErrNoEngine, err, InstallHint)
		}
		return Engine{Name: "podman", Why: "asked for with --kind-provider podman"}, nil
	}
	derr := p.DockerPrivileged(ctx)
	if derr == nil {
		return Engine{Name: "docker", Why: "a privileged container started under Docker"}, nil
	}
	perr := p.Podman(ctx)
	if perr == nil {
		return Engine{Name: "podman", Why: "Docker cannot run kind's node here (" + oneLine(derr.Error()) + "); podman can"}, nil
	}
	return Engine{}, fmt.Errorf("%w: docker: %v; podman: %v; %s", ErrNoEngine, derr, perr, InstallHint)
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

func providerFor(e Engine, log *slog.Logger) *kindcluster.Provider {
	opt := kindcluster.ProviderWithPodman()
	if e.Name == "docker" {
		opt = kindcluster.ProviderWithDocker()
	}
	if log == nil {
		return kindcluster.NewProvider(opt)
	}
	return kindcluster.NewProvider(opt, kindcluster.ProviderWithLogger(kindLogger{log: log}))
}

// realProber probes the engines on this machine.
type realProber struct{}

// probeImage is the image the Docker probe runs: this very executable
// (static; no image can be pulled) as /probe in one layer.
const probeImage = "scaleproof.local/kind-probe:1"

func (r realProber) DockerPrivileged(ctx context.Context) error {
	if _, err := exec.LookPath("docker"); err != nil {
		return errors.New("docker is not installed")
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		return fmt.Errorf("docker info: %v: %s", err, oneLine(string(out)))
	}
	if exec.CommandContext(ctx, "docker", "image", "inspect", probeImage).Run() != nil {
		archive, err := writeProbeImage()
		if err != nil {
			return fmt.Errorf("probe image: %w", err)
		}
		defer os.RemoveAll(filepath.Dir(archive))
		if out, err := exec.CommandContext(ctx, "docker", "load", "-i", archive).CombinedOutput(); err != nil {
			return fmt.Errorf("docker load: %v: %s", err, oneLine(string(out)))
		}
	}
	out, err := exec.CommandContext(ctx, "docker", "run", "--rm", "--privileged", "--network", "none", probeImage).CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker run --privileged: %v: %s", err, oneLine(string(out)))
	}
	return nil
}

func (r realProber) Podman(ctx context.Context) error {
	if _, err := exec.LookPath("podman"); err != nil {
		return errors.New("podman is not installed")
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "podman", "info", "--format", "{{.Version.Version}}").CombinedOutput(); err != nil {
		return fmt.Errorf("podman info: %v: %s", err, oneLine(string(out)))
	}
	return nil
}

// writeProbeImage writes a docker-archive whose one layer is this
// executable as /probe, run as `/probe version`.
func writeProbeImage() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "scaleproof-probe-")
	if err != nil {
		return "", err
	}
	layerPath := filepath.Join(dir, "layer.tar")
	if err := writeSingleFileTar(layerPath, "probe", self); err != nil {
		return "", err
	}
	layer, err := tarball.LayerFromFile(layerPath)
	if err != nil {
		return "", err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return "", err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Entrypoint = []string{"/probe", "version"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return "", err
	}
	tag, err := name.NewTag(probeImage)
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "probe.tar")
	return out, tarball.MultiRefWriteToFile(out, map[name.Reference]v1.Image{tag: img})
}
