package nodeimage

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/kind/internal/buildstep"
)

// Options configure a Builder. Zero values take the defaults.
type Options struct {
	Versions Versions // default Default
	// WorkDir holds build outputs (binaries, root filesystem, step logs);
	// default ~/.cache/scaleproof/nodeimage. Never inside the repository.
	WorkDir string
	// CacheDir holds the compressed image archives for CI caches; default
	// ~/.cache/scaleproof.
	CacheDir string
	// NoArchive: do not write the archive after a build.
	NoArchive bool
	Mirror    string // Debian mirror for debootstrap; default: the one apt uses
	Podman    string // default "podman"
	Log       *slog.Logger
	Now       func() time.Time
}

// Result is what Ensure or Build did.
type Result struct {
	Tag     string
	How     string // "present" (in the store), "loaded" (from the archive), "built"
	Archive string // the archive loaded or written ("" when none)
	Steps   []StepTime
	Elapsed time.Duration
}

// Builder builds one node image (one set of Inputs).
type Builder struct {
	o      Options
	inputs Inputs
}

// DefaultCacheDir is ~/.cache/scaleproof (or $XDG_CACHE_HOME/scaleproof).
func DefaultCacheDir() string { return buildstep.CacheRoot() }

// New makes a Builder; it asks the go on PATH for its version (part of the
// inputs: another toolchain makes other binaries).
func New(ctx context.Context, o Options) (*Builder, error) {
	if o.Versions.Kubernetes == "" {
		o.Versions = Default
	}
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir()
	}
	if o.WorkDir == "" {
		o.WorkDir = filepath.Join(DefaultCacheDir(), "nodeimage")
	}
	if o.Podman == "" {
		o.Podman = "podman"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output()
	if err != nil {
		return nil, fmt.Errorf("node image: go env GOVERSION: %w (Go is needed to build the node's binaries)", err)
	}
	return &Builder{o: o, inputs: NewInputs(o.Versions, strings.TrimSpace(string(out)))}, nil
}

// Tag is the image the builder makes.
func (b *Builder) Tag() string { return b.inputs.Tag() }

// ArchivePath is where the image's cache archive lives.
func (b *Builder) ArchivePath() string { return filepath.Join(b.o.CacheDir, b.inputs.ArchiveName()) }

// Ensure makes sure podman's store has the image: nothing to do when it is
// there, else it is loaded from the cache archive when one exists, else
// built (and the archive written unless NoArchive).
func (b *Builder) Ensure(ctx context.Context) (Result, error) {
	start := b.o.Now()
	tag := b.Tag()
	if ImageExists(ctx, b.o.Podman, tag) {
		b.o.Log.Info("node image present; not rebuilt", "tag", tag)
		return Result{Tag: tag, How: "present"}, nil
	}
	unlock, err := lockWork(ctx, b.workDir()+".lock", b.o.Log.Info)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	if ImageExists(ctx, b.o.Podman, tag) { // built by the run we waited for
		b.o.Log.Info("node image present; not rebuilt", "tag", tag)
		return Result{Tag: tag, How: "present"}, nil
	}
	if p := b.ArchivePath(); exists(p) {
		st := newSteps(filepath.Join(b.workDir(), "logs"), b.o.Log, b.o.Now)
		err := st.Run(ctx, "load-archive", nil, func(sc *stepCtx) error { return LoadArchive(sc, sc.Log, b.o.Podman, tag, p) })
		if err == nil {
			return Result{Tag: tag, How: "loaded", Archive: p, Steps: st.Times, Elapsed: b.o.Now().Sub(start)}, nil
		}
		b.o.Log.Warn("node image archive unusable; building", "archive", p, "err", err)
	}
	return b.build(ctx)
}

func (b *Builder) workDir() string { return filepath.Join(b.o.WorkDir, b.inputs.Hash()) }

// rootfsDir is keyed by what debootstrap gets only, so a new Kubernetes or
// recipe revision reuses it.
func (b *Builder) rootfsDir() string {
	in := Inputs{Versions: Versions{Debian: b.inputs.Versions.Debian}, Packages: b.inputs.Packages}
	return filepath.Join(b.o.WorkDir, "rootfs-"+b.inputs.Versions.Debian+"-"+in.Hash())
}

// Build builds the image whatever the store holds. Steps whose output is
// already in the work dir are skipped; the tag is set only at the very end,
// so a failed build leaves no image under the tag.
func (b *Builder) Build(ctx context.Context) (Result, error) {
	unlock, err := lockWork(ctx, b.workDir()+".lock", b.o.Log.Info)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	return b.build(ctx)
}

func (b *Builder) build(ctx context.Context) (Result, error) {
	start := b.o.Now()
	v := b.inputs.Versions
	work := b.workDir()
	bin := filepath.Join(work, "bin")
	st := newSteps(filepath.Join(work, "logs"), b.o.Log, b.o.Now)
	res := Result{Tag: b.Tag(), How: "built"}
	fail := func(err error) (Result, error) {
		res.Steps, res.Elapsed = st.Times, b.o.Now().Sub(start)
		return res, err
	}
	b.o.Log.Info("building node image", "tag", res.Tag, "work", work)
	if err := Preflight(b.o.Podman); err != nil {
		return fail(err)
	}

	// 1. the node's base root filesystem (first: it needs the network, not the CPU)
	rootfs := b.rootfsDir()
	mirror := b.o.Mirror
	if mirror == "" {
		mirror = AptMirror(hostAptSources()...)
	}
	if err := st.Run(ctx, "debootstrap", func() bool { return exists(rootfs) }, func(sc *stepCtx) error {
		tmp := rootfs + ".tmp"
		_ = os.RemoveAll(tmp)
		if err := debootstrap(sc, v, mirror, tmp); err != nil {
			return err
		}
		return publish(tmp, rootfs)
	}); err != nil {
		return fail(err)
	}

	// 2. binaries, one step per upstream project (Kubernetes, the longest, last)
	type comp struct {
		name  string
		build func(sc *stepCtx, out string) error
	}
	comps := []comp{
		{"containerd", func(sc *stepCtx, out string) error { return buildContainerd(sc, v, out) }},
		{"runc", func(sc *stepCtx, out string) error { return buildRunc(sc, v, out) }},
		{"cni-plugins", func(sc *stepCtx, out string) error { return buildCNI(sc, v, out) }},
		{"crictl", func(sc *stepCtx, out string) error { return buildCrictl(sc, v, out) }},
		{"etcd", func(sc *stepCtx, out string) error { return buildEtcd(sc, v, filepath.Join(work, "src", "etcd"), out) }},
		{"coredns", func(sc *stepCtx, out string) error { return buildCoreDNS(sc, v, out) }},
		{"pause", func(sc *stepCtx, out string) error { return buildPause(sc, v, out) }},
		{"kubernetes", func(sc *stepCtx, out string) error { return buildKube(sc, v, filepath.Join(work, "src", "k8s"), out) }},
	}
	for _, c := range comps {
		out := filepath.Join(bin, c.name)
		if err := st.Run(ctx, "build-"+c.name, func() bool { return exists(out) }, func(sc *stepCtx) error {
			tmp := out + ".tmp"
			_ = os.RemoveAll(tmp)
			if err := os.MkdirAll(tmp, 0o755); err != nil {
				return err
			}
			if err := c.build(sc, tmp); err != nil {
				return err
			}
			return publish(tmp, out)
		}); err != nil {
			return fail(err)
		}
	}
	binary := func(comp, n string) string { return filepath.Join(bin, comp, n) }

	// 3. component images, one docker-archive with exact tags
	images := ComponentImages(v, func(n string) string {
		switch n {
		case "etcd", "coredns", "pause":
			return binary(n, n)
		}
		return binary("kubernetes", n)
	})
	archive := filepath.Join(work, "images", "images.tar")
	if err := st.Run(ctx, "component-images", func() bool { return exists(archive) }, func(sc *stepCtx) error {
		tmp := filepath.Join(work, "images.tmp")
		_ = os.RemoveAll(tmp)
		if err := writeComponentImages(images, rootfs, tmp, filepath.Join(tmp, "images.tar")); err != nil {
			return err
		}
		fmt.Fprintf(sc.Log, "wrote %s with tags %s\n", archive, strings.Join(AllTags(images), " "))
		return publish(tmp, filepath.Dir(archive))
	}); err != nil {
		return fail(err)
	}

	// 4. the node's root filesystem: base + kind's base-image steps + binaries + config
	node := filepath.Join(work, "node.tmp")
	kindDir := ""
	if err := st.Run(ctx, "node-rootfs", nil, func(sc *stepCtx) error {
		_ = os.RemoveAll(node)
		if err := sc.Cmd("", nil, "cp", "-a", rootfs, node); err != nil {
			return err
		}
		m, err := modDownload(sc, os.TempDir(), "sigs.k8s.io/kind@"+v.Kind)
		if err != nil {
			return err
		}
		kindDir = m.Dir
		return assembleNode(sc, v, kindDir, node, binary)
	}); err != nil {
		return fail(err)
	}

	// 5. preload the images into the node's containerd store
	if err := st.Run(ctx, "preload-images", nil, func(sc *stepCtx) error {
		return preload(sc, binary("containerd", "containerd"), binary("containerd", "ctr"),
			filepath.Join(node, "var", "lib", "containerd"), archive, AllTags(images))
	}); err != nil {
		return fail(err)
	}

	// 6. import into podman (untagged), then tag: the only step that makes it visible
	var id string
	if err := st.Run(ctx, "podman-import", nil, func(sc *stepCtx) error {
		var err error
		id, err = podmanImport(sc, b.o.Podman, node)
		return err
	}); err != nil {
		return fail(err)
	}
	if err := st.Run(ctx, "tag", nil, func(sc *stepCtx) error {
		if err := sc.Cmd("", nil, b.o.Podman, "tag", id, res.Tag); err != nil {
			_ = sc.Cmd("", nil, b.o.Podman, "rmi", id)
			return err
		}
		return nil
	}); err != nil {
		return fail(err)
	}
	_ = os.RemoveAll(node)

	if !b.o.NoArchive {
		p := b.ArchivePath()
		if err := os.MkdirAll(b.o.CacheDir, 0o755); err == nil {
			if err := st.Run(ctx, "save-archive", nil, func(sc *stepCtx) error { return SaveArchive(sc, sc.Log, b.o.Podman, res.Tag, p) }); err != nil {
				// the image is built and tagged; a missing cache archive only costs the next CI run
				b.o.Log.Warn("node image archive not written", "err", err)
			} else {
				res.Archive = p
			}
		}
	}
	res.Steps, res.Elapsed = st.Times, b.o.Now().Sub(start)
	b.o.Log.Info("node image built", "tag", res.Tag, "seconds", res.Elapsed.Round(100*time.Millisecond).Seconds())
	return res, nil
}

// assembleNode applies kind's base-image and node-image steps to root.
func assembleNode(sc *stepCtx, v Versions, kindDir, root string, binary func(comp, n string) string) error {
	if err := kindBaseFiles(kindDir, root); err != nil {
		return err
	}
	if err := kindBaseSteps(sc, root); err != nil {
		return err
	}
	installs := []struct{ comp, name, dir string }{
		{"containerd", "containerd", "usr/local/bin"}, {"containerd", "ctr", "usr/local/bin"},
		{"containerd", "containerd-shim-runc-v2", "usr/local/bin"}, {"crictl", "crictl", "usr/local/bin"},
		{"runc", "runc", "usr/local/sbin"},
		{"kubernetes", "kubeadm", "usr/bin"}, {"kubernetes", "kubelet", "usr/bin"}, {"kubernetes", "kubectl", "usr/bin"},
	}
	for _, p := range cniPlugins {
		installs = append(installs, struct{ comp, name, dir string }{"cni-plugins", filepath.Base(p), "opt/cni/bin"})
	}
	for _, in := range installs {
		if err := copyFile(binary(in.comp, in.name), filepath.Join(root, in.dir, in.name), 0o755); err != nil {
			return err
		}
	}
	spec, err := sc.Output("", nil, binary("containerd", "ctr"), "oci", "spec")
	if err != nil {
		return err
	}
	base, err := criBaseSpec([]byte(spec))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "etc/containerd/cri-base.json"), base, 0o644); err != nil {
		return err
	}
	cfgPath := filepath.Join(root, "etc/containerd/config.toml")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		return err
	}
	fixed, err := restrictOOMScoreAdj(string(cfg))
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfgPath, []byte(fixed), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "kind/version"), []byte(v.Kubernetes), 0o644); err != nil {
		return err
	}
	for src, dst := range map[string]string{
		"files/default-storage.yaml":   "kind/manifests/default-storage.yaml",
		"files/10-scaleproof.conflist": "etc/cni/net.d/10-scaleproof.conflist",
	} {
		b, err := assets.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, dst), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Tools are the programs a build runs (besides go).
var Tools = []string{"debootstrap", "gcc", "tar", "cp", "systemctl", "zstd"}

// Preflight fails, before anything is built, when a tool is missing, and
// says how to get it.
func Preflight(podman string) error {
	var missing []string
	for _, t := range append([]string{podman, "go"}, Tools...) {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("node image: missing %s on PATH; run `make deps-kind` (Debian: apt-get install podman debootstrap gcc libseccomp-dev pkg-config zstd)", strings.Join(missing, ", "))
	}
	return nil
}
