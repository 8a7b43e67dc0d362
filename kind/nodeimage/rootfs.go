package nodeimage

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DefaultMirror is used when apt's own sources name no Debian mirror.
const DefaultMirror = "http://deb.debian.org/debian"

// AptMirror returns the first Debian mirror that apt's sources (one-line
// .list or deb822 .sources, text as given) use for the main archive, or
// DefaultMirror. Security and third-party archives are skipped.
func AptMirror(sources ...string) string {
	for _, s := range sources {
		sc := bufio.NewScanner(strings.NewReader(s))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			var uris []string
			switch {
			case strings.HasPrefix(line, "deb "):
				for _, f := range strings.Fields(line)[1:] {
					if strings.HasPrefix(f, "[") || strings.HasSuffix(f, "]") {
						continue
					}
					uris = append(uris, f)
					break
				}
			case strings.HasPrefix(line, "URIs:"):
				uris = strings.Fields(strings.TrimPrefix(line, "URIs:"))
			}
			for _, u := range uris {
				if (strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")) &&
					strings.HasSuffix(strings.TrimSuffix(u, "/"), "/debian") {
					return strings.TrimSuffix(u, "/")
				}
			}
		}
	}
	return DefaultMirror
}

// hostAptSources reads /etc/apt/sources.list and sources.list.d/*.
func hostAptSources() []string {
	var out []string
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*")
	for _, f := range append([]string{"/etc/apt/sources.list"}, files...) {
		if b, err := os.ReadFile(f); err == nil {
			out = append(out, string(b))
		}
	}
	return out
}

// debootstrap makes the node's base root filesystem in dir.
func debootstrap(sc *stepCtx, v Versions, mirror, dir string) error {
	args := []string{"--variant=minbase", "--include=" + strings.Join(Packages, ","), v.Debian, dir, mirror}
	if err := sc.Cmd("", nil, "debootstrap", args...); err != nil {
		return err
	}
	// what kind's clean-install removes; the node never runs apt
	for _, g := range []string{"var/cache/apt/*", "var/lib/apt/lists/*", "usr/share/doc/*", "usr/share/man/*", "usr/share/locale/*", "usr/share/info/*", "var/log/*.log"} {
		if err := removeGlob(dir, g); err != nil {
			return err
		}
	}
	return nil
}

func removeGlob(root, pattern string) error {
	m, err := filepath.Glob(filepath.Join(root, pattern))
	if err != nil {
		return err
	}
	for _, p := range m {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	return nil
}

// kindBaseFiles installs kind's images/base/files into root the way kind's
// base Dockerfile does: executables under usr/local/bin and kind/bin 0755,
// everything else 0644, folders 0755.
func kindBaseFiles(kindDir, root string) error {
	src := filepath.Join(kindDir, "images", "base", "files")
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(root, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		mode := fs.FileMode(0o644)
		if strings.HasPrefix(rel, "usr/local/bin/") || strings.HasPrefix(rel, "kind/bin/") {
			mode = 0o755
		}
		return copyFile(p, dst, mode)
	})
}

// kindBaseSteps is the rest of kind's base Dockerfile: the systemd units
// it removes, journald without kmsg, /sbin/init, the enabled units.
func kindBaseSteps(sc *stepCtx, root string) error {
	for _, g := range []string{
		"lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service",
		"lib/systemd/system/multi-user.target.wants/*",
		"etc/systemd/system/*.wants/*",
		"lib/systemd/system/local-fs.target.wants/*",
		"lib/systemd/system/sockets.target.wants/*udev*",
		"lib/systemd/system/sockets.target.wants/*initctl*",
		"lib/systemd/system/basic.target.wants/*",
	} {
		if err := removeGlob(root, g); err != nil {
			return err
		}
	}
	if err := appendFile(filepath.Join(root, "etc/systemd/journald.conf"), "ReadKMsg=no\n"); err != nil {
		return err
	}
	init := filepath.Join(root, "sbin", "init")
	if fi, err := os.Lstat(filepath.Join(root, "sbin")); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		init = filepath.Join(root, "usr", "sbin", "init") // merged /usr: never write through a link
	}
	_ = os.Remove(init)
	if err := os.Symlink("/usr/lib/systemd/systemd", init); err != nil {
		return err
	}
	if err := sc.Cmd("", nil, "systemctl", "--root="+root, "enable", "kubelet.service", "containerd.service", "undo-mount-hacks.service"); err != nil {
		return err
	}
	if err := sc.Cmd("", nil, "systemctl", "--root="+root, "mask", "systemd-binfmt.service"); err != nil {
		return err
	}
	for _, d := range []string{"etc/kubernetes/manifests", "opt/cni/bin", "etc/cni/net.d", "kind/manifests"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// criBaseSpec turns `ctr oci spec` output into kind's cri-base.json: kind's
// createContainer hook added and process.rlimits removed (runc in the node
// then sets none; the node has no CAP_SYS_RESOURCE to raise them).
func criBaseSpec(spec []byte) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(spec, &m); err != nil {
		return nil, fmt.Errorf("ctr oci spec: %w", err)
	}
	hooks, _ := m["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
	}
	cc, _ := hooks["createContainer"].([]any)
	hooks["createContainer"] = append(cc, map[string]any{"path": "/kind/bin/mount-product-files.sh"})
	m["hooks"] = hooks
	if p, ok := m["process"].(map[string]any); ok {
		delete(p, "rlimits")
	}
	return json.MarshalIndent(m, "", "  ")
}

// restrictOOMScoreAdj sets containerd's CRI restrict_oom_score_adj: without
// CAP_SYS_RESOURCE in the node no value below the current one can be
// written, and every pod sandbox fails "failed to update
// /proc/self/oom_score_adj: Permission denied".
func restrictOOMScoreAdj(config string) (string, error) {
	const off, on = "restrict_oom_score_adj = false", "restrict_oom_score_adj = true"
	if !strings.Contains(config, off) {
		if strings.Contains(config, on) {
			return config, nil
		}
		return "", fmt.Errorf("containerd config has no %q to turn on", off)
	}
	return strings.Replace(config, off, on, 1), nil
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	_ = os.Remove(dst)
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}

func appendFile(p, s string) error {
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
