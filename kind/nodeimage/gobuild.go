package nodeimage

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The flags below are the recipe's exactly (same -trimpath and tags as kind's
// own builds), so a warm GOCACHE is hit; -ldflags -X only changes linking.

// kubeBinaries are the seven Kubernetes binaries a node holds, built in one
// go build so they share the compile work.
var kubeBinaries = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubeadm", "kube-proxy", "kubectl"}

// cniPlugins are the CNI plugins in /opt/cni/bin (ptp + host-local +
// portmap is the static network; loopback and bridge as kind ships them).
var cniPlugins = []string{"ipam/host-local", "main/loopback", "main/ptp", "meta/portmap", "main/bridge"}

var goEnv = []string{"GOTOOLCHAIN=local", "GOWORK=off"}

// kubeVersionLDFlags stamps the version packages as upstream's build does;
// without the stamps kubeadm and kind refuse the binaries.
func kubeVersionLDFlags(v Versions) string {
	major, minor := "1", ""
	parts := strings.SplitN(strings.TrimPrefix(v.Kubernetes, "v"), ".", 3)
	if len(parts) >= 2 {
		major, minor = parts[0], parts[1]
	}
	ld := "-s -w"
	for _, p := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		ld += fmt.Sprintf(" -X %[1]s.gitVersion=%[2]s -X %[1]s.gitMajor=%[3]s -X %[1]s.gitMinor=%[4]s"+
			" -X %[1]s.gitCommit=0000000000000000000000000000000000000000 -X %[1]s.gitTreeState=clean"+
			" -X %[1]s.buildDate=2026-01-01T00:00:00Z", p, v.Kubernetes, major, minor)
	}
	return ld
}

// kubeWrapperGoMod is the go.mod of the module that builds Kubernetes from
// the proxy: k8s.io/kubernetes replaces every k8s.io/<staging> module with a
// ./staging folder the module zip lacks, so each is pointed at its release.
// upstream is k8s.io/kubernetes's own go.mod.
func kubeWrapperGoMod(v Versions, upstream string) string {
	var reps []string
	sc := bufio.NewScanner(strings.NewReader(upstream))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// "k8s.io/api => ./staging/src/k8s.io/api" (inside a replace block)
		if len(f) == 3 && f[1] == "=>" && strings.HasPrefix(f[2], "./staging") {
			reps = append(reps, f[0])
		}
	}
	sort.Strings(reps)
	var b strings.Builder
	fmt.Fprintf(&b, "module scaleproof.local/kindnode/k8s\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n", v.Kubernetes)
	for _, r := range reps {
		fmt.Fprintf(&b, "\t%s => %s %s\n", r, r, v.Staging)
	}
	b.WriteString(")\n")
	return b.String()
}

func kubeToolsGo() string {
	var b strings.Builder
	b.WriteString("//go:build tools\n\npackage tools\n\nimport (\n")
	for _, n := range kubeBinaries {
		fmt.Fprintf(&b, "\t_ \"k8s.io/kubernetes/cmd/%s\"\n", n)
	}
	b.WriteString(")\n")
	return b.String()
}

type modInfo struct {
	Dir   string
	GoMod string
}

func modDownload(sc *stepCtx, dir, mod string) (modInfo, error) {
	out, err := sc.Output(dir, nil, "go", "mod", "download", "-json", mod)
	if err != nil {
		return modInfo{}, err
	}
	var m modInfo
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		return modInfo{}, fmt.Errorf("go mod download %s: %w", mod, err)
	}
	return m, nil
}

// buildKube builds the seven Kubernetes binaries into out.
func buildKube(sc *stepCtx, v Versions, src, out string) error {
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(src, "go.mod"))
	m, err := modDownload(sc, src, "k8s.io/kubernetes@"+v.Kubernetes)
	if err != nil {
		return err
	}
	up, err := os.ReadFile(m.GoMod)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte(kubeWrapperGoMod(v, string(up))), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "tools.go"), []byte(kubeToolsGo()), 0o644); err != nil {
		return err
	}
	if err := sc.Cmd(src, goEnv, "go", "mod", "tidy"); err != nil {
		return err
	}
	args := []string{"build", "-trimpath", "-tags", "selinux,notest,grpcnotrace", "-ldflags", kubeVersionLDFlags(v), "-o", out + "/"}
	for _, n := range kubeBinaries {
		args = append(args, "k8s.io/kubernetes/cmd/"+n)
	}
	return sc.Cmd(src, append(goEnv, "CGO_ENABLED=0"), "go", args...)
}

// goInstall runs go install pkg@version... with GOBIN=out.
func goInstall(sc *stepCtx, out string, cgo bool, tags, ldflags string, pkgs ...string) error {
	args := []string{"install", "-trimpath"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	args = append(args, "-ldflags", ldflags)
	args = append(args, pkgs...)
	c := "CGO_ENABLED=0"
	if cgo {
		c = "CGO_ENABLED=1"
	}
	return sc.Cmd(os.TempDir(), append(goEnv, c, "GOBIN="+out), "go", args...)
}

func buildContainerd(sc *stepCtx, v Versions, out string) error {
	var pkgs []string
	for _, c := range []string{"containerd", "ctr", "containerd-shim-runc-v2"} {
		pkgs = append(pkgs, "github.com/containerd/containerd/v2/cmd/"+c+"@"+v.Containerd)
	}
	return goInstall(sc, out, false, "no_aufs no_zfs no_btrfs no_devmapper",
		"-s -w -X github.com/containerd/containerd/v2/version.Version="+v.Containerd, pkgs...)
}

// buildRunc links runc against libseccomp (libseccomp-dev on the host; the
// node's bookworm has libseccomp2).
func buildRunc(sc *stepCtx, v Versions, out string) error {
	return goInstall(sc, out, true, "seccomp", "-s -w -X main.version="+strings.TrimPrefix(v.Runc, "v"),
		"github.com/opencontainers/runc@"+v.Runc)
}

func buildCNI(sc *stepCtx, v Versions, out string) error {
	var pkgs []string
	for _, p := range cniPlugins {
		pkgs = append(pkgs, "github.com/containernetworking/plugins/plugins/"+p+"@"+v.CNIPlugins)
	}
	return goInstall(sc, out, false, "", "-s -w", pkgs...)
}

func buildCrictl(sc *stepCtx, v Versions, out string) error {
	return goInstall(sc, out, false, "", "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version="+v.Crictl,
		"sigs.k8s.io/cri-tools/cmd/crictl@"+v.Crictl)
}

func buildCoreDNS(sc *stepCtx, v Versions, out string) error {
	return goInstall(sc, out, false, "", "-s -w", "github.com/coredns/coredns@"+v.CoreDNS)
}

// buildEtcd builds etcd from a three-line wrapper module (etcdmain.Main).
func buildEtcd(sc *stepCtx, v Versions, src, out string) error {
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	gomod := fmt.Sprintf("module scaleproof.local/kindnode/etcd\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n", v.Etcd)
	main := "package main\n\nimport (\n\t\"os\"\n\n\t\"go.etcd.io/etcd/server/v3/etcdmain\"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n"
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(main), 0o644); err != nil {
		return err
	}
	if err := sc.Cmd(src, goEnv, "go", "mod", "tidy"); err != nil {
		return err
	}
	return sc.Cmd(src, append(goEnv, "CGO_ENABLED=0"), "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(out, "etcd"), ".")
}

// buildPause compiles Kubernetes' pause.c (from the k8s.io/kubernetes module) statically.
func buildPause(sc *stepCtx, v Versions, out string) error {
	m, err := modDownload(sc, os.TempDir(), "k8s.io/kubernetes@"+v.Kubernetes)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	return sc.Cmd(out, nil, "gcc", "-static", "-Os", "-DVERSION="+v.Kubernetes, "-o", filepath.Join(out, "pause"),
		filepath.Join(m.Dir, "build", "pause", "linux", "pause.c"))
}
