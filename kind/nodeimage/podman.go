package nodeimage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// ImageExists reports whether podman's local image store has ref.
func ImageExists(ctx context.Context, podman, ref string) bool {
	return exec.CommandContext(ctx, podman, "image", "exists", ref).Run() == nil
}

// pipe runs a | b with both stderrs (and b's stdout when out is nil) in log.
func pipe(ctx context.Context, log io.Writer, out io.Writer, a, b *exec.Cmd) error {
	fmt.Fprintf(log, "$ %s | %s\n", strings.Join(a.Args, " "), strings.Join(b.Args, " "))
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	a.Stdout, a.Stderr = w, log
	b.Stdin, b.Stderr = r, log
	b.Stdout = out
	if out == nil {
		b.Stdout = log
	}
	if err := a.Start(); err != nil {
		r.Close()
		w.Close()
		return fmt.Errorf("%s: %w", a.Args[0], err)
	}
	w.Close()
	if err := b.Start(); err != nil {
		r.Close()
		_ = a.Process.Kill()
		_ = a.Wait()
		return fmt.Errorf("%s: %w", b.Args[0], err)
	}
	r.Close()
	errB := b.Wait()
	errA := a.Wait()
	if errA != nil {
		return fmt.Errorf("%s: %w", a.Args[0], errA)
	}
	if errB != nil {
		return fmt.Errorf("%s: %w", b.Args[0], errB)
	}
	return nil
}

// podmanImport streams the folder root into `podman import` with kind's
// node image config (entrypoint, container=docker, SIGRTMIN+3) and returns
// the new image's ID. The image is untagged: the caller tags it once
// everything else has succeeded.
func podmanImport(sc *stepCtx, podman, root string) (string, error) {
	tarCmd := exec.CommandContext(sc, "tar", "-C", root, "--numeric-owner", "--xattrs", "-cf", "-", ".")
	imp := exec.CommandContext(sc, podman, "import",
		"--change", `ENTRYPOINT ["/usr/local/bin/entrypoint","/sbin/init"]`,
		"--change", "ENV container=docker",
		"--change", "STOPSIGNAL SIGRTMIN+3",
		"-")
	var out strings.Builder
	if err := pipe(sc, sc.Log, io.MultiWriter(&out, sc.Log), tarCmd, imp); err != nil {
		return "", err
	}
	lines := strings.Fields(out.String())
	if len(lines) == 0 {
		return "", errors.New("podman import printed no image ID")
	}
	return strings.TrimPrefix(lines[len(lines)-1], "sha256:"), nil
}

// SaveArchive writes ref from podman's store to path as a zstd-compressed
// docker-archive (written to path.tmp, then renamed).
func SaveArchive(ctx context.Context, log io.Writer, podman, ref, path string) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	save := exec.CommandContext(ctx, podman, "save", "--format", "docker-archive", ref)
	z := exec.CommandContext(ctx, "zstd", "-3", "-T0", "-q", "-c")
	err = pipe(ctx, log, f, save, z)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("save %s: %w", ref, err)
	}
	return os.Rename(tmp, path)
}

// LoadArchive loads a zstd docker-archive written by SaveArchive into
// podman's store and checks that ref is there afterwards.
func LoadArchive(ctx context.Context, log io.Writer, podman, ref, path string) error {
	z := exec.CommandContext(ctx, "zstd", "-dc", "-q", path)
	load := exec.CommandContext(ctx, podman, "load")
	if err := pipe(ctx, log, nil, z, load); err != nil {
		return fmt.Errorf("load %s: %w", path, err)
	}
	if !ImageExists(ctx, podman, ref) {
		return fmt.Errorf("load %s: podman has no %s afterwards", path, ref)
	}
	return nil
}

// CopyToDocker copies ref from podman's store into Docker's (podman save |
// docker load), for a Docker engine that should run our node image.
func CopyToDocker(ctx context.Context, log io.Writer, podman, ref string) error {
	save := exec.CommandContext(ctx, podman, "save", "--format", "docker-archive", ref)
	load := exec.CommandContext(ctx, "docker", "load")
	if err := pipe(ctx, log, nil, save, load); err != nil {
		return fmt.Errorf("copy %s from podman to docker: %w", ref, err)
	}
	return nil
}
