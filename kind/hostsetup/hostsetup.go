// Package hostsetup prepares a Debian host for kind's podman provider and
// for building the node image offline (what `make deps-kind` runs). Each
// fix names the error it prevents; every action is idempotent.
package hostsetup

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Packages are the Debian packages the podman path needs: podman and runc
// run the node; debootstrap, gcc, libseccomp-dev and pkg-config build the
// node image; jq and zstd (the CI cache archive); tar.
var Packages = []string{"podman", "crun", "runc", "debootstrap", "libseccomp-dev", "pkg-config", "jq", "zstd", "gcc", "tar"}

// NprocCap is the highest nproc podman can set here: 32768 works, 65536
// fails with "error setting rlimit type 6". root is exempt from RLIMIT_NPROC
// anyway, so a lower value costs nothing.
const NprocCap = 32768

// NofileCap bounds nofile when the hard limit is unlimited.
const NofileCap = 1 << 20

// Marker is the first line of a containers.conf this package wrote.
const Marker = "# written by scaleproof's make deps-kind (kind's podman provider on this host)"

// Ulimits computes podman's default_ulimits from this process's hard limits
// (those of the shell that runs podman): never above them, since podman's
// root defaults raise limits, which needs CAP_SYS_RESOURCE ("error setting
// rlimit type 7 (NOFILE) ... operation not permitted"); nproc at most
// NprocCap. unix.RLIM_INFINITY counts as the cap.
func Ulimits(nofileHard, nprocHard uint64) (nofile, nproc uint64) {
	nofile = min(nofileHard, NofileCap)
	nproc = min(nprocHard, NprocCap)
	return nofile, nproc
}

// HardLimits reads this process's hard RLIMIT_NOFILE and RLIMIT_NPROC.
func HardLimits() (nofile, nproc uint64, err error) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0, fmt.Errorf("getrlimit nofile: %w", err)
	}
	nofile = r.Max
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &r); err != nil {
		return 0, 0, fmt.Errorf("getrlimit nproc: %w", err)
	}
	return nofile, r.Max, nil
}

// ContainersConf is podman's /etc/containers/containers.conf for this host:
// runtime runc (crun refuses a cgroup v1 host: "cgroups in hybrid mode not
// supported, drop all controllers from cgroupv2") and the default ulimits.
func ContainersConf(nofile, nproc uint64) string {
	return fmt.Sprintf(`%s
[containers]
default_ulimits = [
  "nofile=%d:%d",
  "nproc=%d:%d",
]

[engine]
runtime = "runc"
`, Marker, nofile, nofile, nproc, nproc)
}

// Options for Apply. Zero values are the real host paths.
type Options struct {
	ConfPath   string // default /etc/containers/containers.conf
	ModulesDir string // default /lib/modules
	SkipApt    bool
	Out        io.Writer
}

// Apply installs the missing packages with apt-get, writes containers.conf
// when it differs (an existing file not written here is kept beside it as
// .before-scaleproof), and makes /lib/modules (kind always bind-mounts it:
// "statfs /lib/modules: no such file or directory").
func Apply(ctx context.Context, o Options) error {
	if o.ConfPath == "" {
		o.ConfPath = "/etc/containers/containers.conf"
	}
	if o.ModulesDir == "" {
		o.ModulesDir = "/lib/modules"
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if !o.SkipApt {
		if err := aptInstall(ctx, o.Out); err != nil {
			return err
		}
	}
	nf, np, err := HardLimits()
	if err != nil {
		return err
	}
	nofile, nproc := Ulimits(nf, np)
	if _, err := WriteConf(o.ConfPath, ContainersConf(nofile, nproc), o.Out); err != nil {
		return err
	}
	if _, err := os.Stat(o.ModulesDir); os.IsNotExist(err) {
		if err := os.MkdirAll(o.ModulesDir, 0o755); err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "deps-kind: made %s\n", o.ModulesDir)
	}
	return nil
}

// WriteConf writes want to path unless it already holds exactly that; it
// reports whether it wrote.
func WriteConf(path, want string, out io.Writer) (bool, error) {
	old, err := os.ReadFile(path)
	if err == nil && string(old) == want {
		fmt.Fprintf(out, "deps-kind: %s up to date\n", path)
		return false, nil
	}
	if err == nil && !strings.HasPrefix(string(old), Marker) {
		if err := os.WriteFile(path+".before-scaleproof", old, 0o644); err != nil {
			return false, err
		}
		fmt.Fprintf(out, "deps-kind: kept the old %s as %s.before-scaleproof\n", path, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
		return false, err
	}
	fmt.Fprintf(out, "deps-kind: wrote %s\n", path)
	return true, nil
}

func aptInstall(ctx context.Context, out io.Writer) error {
	var missing []string
	for _, p := range Packages {
		st, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Status}", p).Output()
		if err != nil || !strings.Contains(string(st), "install ok installed") {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		fmt.Fprintf(out, "deps-kind: packages present: %s\n", strings.Join(Packages, " "))
		return nil
	}
	fmt.Fprintf(out, "deps-kind: apt-get install %s\n", strings.Join(missing, " "))
	run := func(args ...string) error {
		c := exec.CommandContext(ctx, "apt-get", args...)
		c.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		c.Stdout, c.Stderr = out, out
		if err := c.Run(); err != nil {
			return fmt.Errorf("apt-get %s: %w (needs root and Debian's apt)", args[0], err)
		}
		return nil
	}
	if err := run("update", "-qq"); err != nil {
		return err
	}
	return run(append([]string{"install", "-y", "-qq", "--no-install-recommends"}, missing...)...)
}
