// Package image builds the reference system's container image without a
// daemon or a registry: the static scaleproof-ref binary (CGO_ENABLED=0) on
// an empty base, user 65532:65532, entrypoint ["/scaleproof-ref"], and
// beside it the static scaleproof binary at /scaleproof (what the pods of a
// distributed load run: `scaleproof load-shard`), written with
// go-containerregistry as a docker-archive tar (the format kind's
// image-archive loading, `podman load` and `ctr images import` take).
//
// The tag is always exact: scaleproof.local/scaleproof-ref:<version>, or
// :sha-<first 12 hex digits of the binary's SHA-256> when no version is
// given. Never :latest, so a node never mistakes an old image for a new one
// and imagePullPolicy: Never is safe.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Repository is the image's name without its tag. The ".local" registry is
// never contacted: the image only reaches a node through an archive.
const Repository = "scaleproof.local/scaleproof-ref"

// Entrypoint is the binary's path inside the image.
const Entrypoint = "/scaleproof-ref"

// ScaleproofPath is the scaleproof binary's path inside the image (the
// load shards' command; autoscaler/deploy/kube.LoadShardBinary).
const ScaleproofPath = "/scaleproof"

// File is one more file of the image: a static binary at Path (absolute),
// mode 0755.
type File struct {
	Path string
	Body []byte
}

// User is the numeric user:group the image runs as (the conventional
// "nonroot" of distroless images).
const User = "65532:65532"

var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// Tag returns the full image reference for version, or for the content
// hash of the binaries (in order) when version is empty. A version that is
// not a valid Docker tag (or is "latest") is an error.
func Tag(version string, binaries ...[]byte) (string, error) {
	if version == "" {
		h := sha256.New()
		for _, b := range binaries {
			h.Write(b)
		}
		version = "sha-" + hex.EncodeToString(h.Sum(nil))[:12]
	}
	if version == "latest" || !tagRE.MatchString(version) {
		return "", fmt.Errorf("image: tag %q: want 1 to 128 of [A-Za-z0-9_.-], not starting with '.' or '-', and not \"latest\"", version)
	}
	return Repository + ":" + version, nil
}

// Write writes a docker-archive tar at path holding one image tagged ref:
// binary as Entrypoint and each extra file at its path (mode 0755, owner
// 0:0, mtime 0) and an empty /tmp (1777), User 65532:65532. The same
// binaries and ref give the same bytes.
func Write(path, ref string, binary []byte, extra ...File) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("image: tag %q: %w", ref, err)
	}
	layerTar, err := layer(binary, extra)
	if err != nil {
		return err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return fmt.Errorf("image: layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return fmt.Errorf("image: append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("image: config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = runtime.GOARCH, "linux"
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Entrypoint = []string{Entrypoint}
	cf.Config.User = User
	cf.Config.Env = []string{"PATH=/"}
	cf.Config.Labels = map[string]string{"org.opencontainers.image.title": "scaleproof-ref", "org.opencontainers.image.version": tag.TagStr()}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return fmt.Errorf("image: set config: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("image: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	return nil
}

// layer is the image's only layer as an uncompressed tar.
func layer(binary []byte, extra []File) ([]byte, error) {
	if len(binary) == 0 {
		return nil, errors.New("image: empty binary")
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	epoch := time.Unix(0, 0)
	hdrs := []struct {
		h    tar.Header
		body []byte
	}{
		{tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: epoch}, nil},
		{tar.Header{Typeflag: tar.TypeReg, Name: Entrypoint[1:], Mode: 0o755, Size: int64(len(binary)), ModTime: epoch}, binary},
	}
	for _, f := range extra {
		p := strings.TrimPrefix(path.Clean(f.Path), "/")
		if !strings.HasPrefix(f.Path, "/") || p == "" || strings.Contains(p, "/") || p == Entrypoint[1:] || p == "tmp" {
			return nil, fmt.Errorf("image: extra file %q: want a new path at the root, like /scaleproof", f.Path)
		}
		if len(f.Body) == 0 {
			return nil, fmt.Errorf("image: extra file %s is empty", f.Path)
		}
		hdrs = append(hdrs, struct {
			h    tar.Header
			body []byte
		}{tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: 0o755, Size: int64(len(f.Body)), ModTime: epoch}, f.Body})
	}
	for _, e := range hdrs {
		h := e.h
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(&h); err != nil {
			return nil, fmt.Errorf("image: layer %s: %w", h.Name, err)
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, fmt.Errorf("image: layer %s: %w", h.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	return b.Bytes(), nil
}

// BuildOptions configure Build.
type BuildOptions struct {
	// ModuleDir is the scaleproof module's root (where go.mod is).
	ModuleDir string
	// Version is the tag; "" tags by the binary's content hash.
	Version string
	// Out is the archive's path; "" means <ModuleDir>/bin/scaleproof-ref-image.tar.
	Out string
	// Go is the go command; "" means "go" on PATH.
	Go string
	// Log receives go build's output; nil discards it.
	Log io.Writer
}

// Result is a built image.
type Result struct {
	Ref     string // scaleproof.local/scaleproof-ref:<tag>
	Archive string // the docker-archive tar
	Binary  string // the static binary that went in
	Took    time.Duration
}

// Build compiles ./cmd/scaleproof-ref and ./cmd/scaleproof static
// (CGO_ENABLED=0, -trimpath, linux/GOARCH of the host, one go build) and
// writes their image archive. An error names the
// step (go build, or writing the archive); no archive is left half written.
func Build(ctx context.Context, o BuildOptions) (Result, error) {
	start := time.Now()
	if o.ModuleDir == "" {
		return Result{}, errors.New("image: build: no module dir")
	}
	goCmd := o.Go
	if goCmd == "" {
		goCmd = "go"
	}
	out := o.Out
	if out == "" {
		out = filepath.Join(o.ModuleDir, "bin", "scaleproof-ref-image.tar")
	}
	rootfs := filepath.Join(filepath.Dir(out), "image-rootfs")
	binPath := filepath.Join(rootfs, "scaleproof-ref")
	if err := os.MkdirAll(filepath.Dir(binPath), 0o755); err != nil {
		return Result{}, fmt.Errorf("image: build: %w", err)
	}
	ld := "-s -w"
	if o.Version != "" {
		ld += " -X main.version=" + o.Version
	}
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-buildvcs=false", "-ldflags", ld, "-o", rootfs+string(filepath.Separator), "./cmd/scaleproof-ref", "./cmd/scaleproof")
	cmd.Dir = o.ModuleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	var logBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
	if err := cmd.Run(); err != nil {
		if o.Log != nil {
			_, _ = o.Log.Write(logBuf.Bytes())
		}
		return Result{}, fmt.Errorf("image: go build ./cmd/scaleproof-ref ./cmd/scaleproof (CGO_ENABLED=0): %w: %s", err, bytes.TrimSpace(logBuf.Bytes()))
	}
	if o.Log != nil {
		_, _ = o.Log.Write(logBuf.Bytes())
	}
	bin, err := os.ReadFile(binPath)
	if err != nil {
		return Result{}, fmt.Errorf("image: %w", err)
	}
	sp, err := os.ReadFile(filepath.Join(rootfs, "scaleproof"))
	if err != nil {
		return Result{}, fmt.Errorf("image: %w", err)
	}
	ref, err := Tag(o.Version, bin, sp)
	if err != nil {
		return Result{}, err
	}
	if err := Write(out, ref, bin, File{Path: ScaleproofPath, Body: sp}); err != nil {
		return Result{}, err
	}
	return Result{Ref: ref, Archive: out, Binary: binPath, Took: time.Since(start)}, nil
}

// CheckStatic reports whether binary is a statically linked ELF
// executable (no program interpreter): one that runs on the image's empty
// base. A binary built with cgo (dynamically linked) is an error that says
// how to build it.
func CheckStatic(binary []byte) error {
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		return fmt.Errorf("image: not an ELF executable (%v): the image holds linux binaries", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("image: the binary is dynamically linked: it cannot run on the image's empty base; build it with CGO_ENABLED=0 (make build)")
		}
	}
	return nil
}
