// Package nodeimage builds a kind node image with no registry: every binary
// from the Go module proxy, the root filesystem from Debian with debootstrap,
// the component images (kube-apiserver, etcd, CoreDNS, pause ...) written
// with go-containerregistry and preloaded into the node's containerd, and
// the result imported into podman's image store.
//
// The image is tagged localhost/scaleproof/kind-node:<kubernetes version>-<hash
// of every input> and never rebuilt when the local image store has that tag.
// It can be saved to, and loaded from, a zstd archive for CI caches.
//
// What it shells out to: go (build, install, mod), gcc, debootstrap, cp, tar,
// containerd and ctr (the preload), systemctl --root, podman (import, tag,
// save, load, image exists) and zstd. Nothing else.
package nodeimage

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"sort"
	"strings"
)

// Revision changes whenever the recipe below changes in a way the versions
// do not show (a new workaround, another file in the node); it is part of
// the hash, so a changed recipe gets a new tag.
const Revision = 1

// Versions are the upstream releases one node image is made of. Kubernetes
// v1.37.0's kubeadm wants etcd 3.7.0-0, CoreDNS v1.14.6 and pause 3.10.2;
// kind v0.33.0's containerd config uses pause 3.10 (both are tagged).
type Versions struct {
	Kubernetes string // v1.37.0
	Staging    string // v0.37.0: the k8s.io/<staging> modules of that release
	Kind       string // v0.33.0: its images/base/files go into the node
	Containerd string // v2.3.4
	Runc       string // v1.4.3
	CNIPlugins string // v1.9.1
	Crictl     string // v1.36.0
	Etcd       string // v3.7.0 (module go.etcd.io/etcd/server/v3)
	EtcdTag    string // 3.7.0-0
	CoreDNS    string // v1.14.6
	PauseTags  []string
	Debian     string // bookworm: systemd 252 still boots on cgroup v1 (systemd >= 256 refuses)
}

// Default is the tested set (kind v0.33.0's defaults, built from source).
var Default = Versions{
	Kubernetes: "v1.37.0", Staging: "v0.37.0", Kind: "v0.33.0",
	Containerd: "v2.3.4", Runc: "v1.4.3", CNIPlugins: "v1.9.1", Crictl: "v1.36.0",
	Etcd: "v3.7.0", EtcdTag: "3.7.0-0", CoreDNS: "v1.14.6", PauseTags: []string{"3.10.2", "3.10"},
	Debian: "bookworm",
}

// Packages are the Debian packages of the node's root filesystem (kind's
// base image list, without nfs-common and open-iscsi, plus what the static
// CNI and kube-proxy need).
var Packages = []string{
	"systemd", "systemd-sysv", "dbus", "conntrack", "iptables", "nftables", "iproute2", "ethtool",
	"util-linux", "mount", "kmod", "libseccomp2", "pigz", "fuse-overlayfs", "bash", "ca-certificates",
	"curl", "jq", "procps", "socat", "ebtables", "e2fsprogs",
}

// Repository is where built node images are tagged (localhost/ makes kind's
// podman provider use the local image and never pull).
const Repository = "localhost/scaleproof/kind-node"

//go:embed files
var assets embed.FS

// Inputs is everything the image is made from. Its Hash names the image.
type Inputs struct {
	Revision  int
	Versions  Versions
	Packages  []string
	GoVersion string            // the toolchain that builds the binaries (go env GOVERSION)
	Assets    map[string]string // path -> sha256 of the files this package adds to the node
}

// NewInputs collects the inputs of a build with versions v and Go goVersion.
func NewInputs(v Versions, goVersion string) Inputs {
	in := Inputs{Revision: Revision, Versions: v, Packages: append([]string(nil), Packages...), GoVersion: goVersion, Assets: map[string]string{}}
	sort.Strings(in.Packages)
	_ = fs.WalkDir(assets, "files", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		in.Assets[p] = hex.EncodeToString(sum[:])
		return nil
	})
	return in
}

// Hash is the first 12 hex digits of the sha256 of the inputs' canonical
// JSON (map keys sorted by encoding/json).
func (in Inputs) Hash() string {
	b, _ := json.Marshal(in)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12]
}

// Tag is the image's full reference, e.g.
// localhost/scaleproof/kind-node:v1.37.0-0123456789ab.
func (in Inputs) Tag() string {
	return Repository + ":" + in.Versions.Kubernetes + "-" + in.Hash()
}

// ArchiveName is the file name of the image's zstd cache archive.
func (in Inputs) ArchiveName() string {
	return "kind-node-" + strings.TrimPrefix(in.Versions.Kubernetes, "v") + "-" + in.Hash() + ".tar.zst"
}
