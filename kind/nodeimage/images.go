package nodeimage

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// imagePath is the PATH of every component image (kubeadm runs the
// control-plane binaries by name).
const imagePath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ComponentImage is one image the node preloads: its exact tags and what
// goes on top of the shared base layer.
type ComponentImage struct {
	Tags       []string
	Files      map[string]string // path in the image -> file on this machine (mode 0755)
	Entrypoint []string
	Slim       bool // on top of a slimmed copy of the node's root filesystem (kube-proxy)
}

// ComponentImages lists the images kubeadm and kind's containerd config ask
// for; bin(name) is the path of a built binary.
func ComponentImages(v Versions, bin func(name string) string) []ComponentImage {
	k := func(n string) ComponentImage {
		return ComponentImage{Tags: []string{"registry.k8s.io/" + n + ":" + v.Kubernetes},
			Files: map[string]string{"usr/local/bin/" + n: bin(n)}, Entrypoint: []string{"/usr/local/bin/" + n}}
	}
	var pause []string
	for _, t := range v.PauseTags {
		pause = append(pause, "registry.k8s.io/pause:"+t)
	}
	proxy := k("kube-proxy")
	proxy.Slim = true
	return []ComponentImage{
		k("kube-apiserver"), k("kube-controller-manager"), k("kube-scheduler"), proxy,
		{Tags: []string{"registry.k8s.io/etcd:" + v.EtcdTag}, Files: map[string]string{"usr/local/bin/etcd": bin("etcd")}, Entrypoint: []string{"/usr/local/bin/etcd"}},
		{Tags: []string{"registry.k8s.io/coredns/coredns:" + v.CoreDNS}, Files: map[string]string{"coredns": bin("coredns")}, Entrypoint: []string{"/coredns"}},
		{Tags: pause, Files: map[string]string{"pause": bin("pause")}, Entrypoint: []string{"/pause"}},
	}
}

// AllTags is every tag of imgs, sorted.
func AllTags(imgs []ComponentImage) []string {
	var t []string
	for _, im := range imgs {
		t = append(t, im.Tags...)
	}
	sort.Strings(t)
	return t
}

// layerWriter writes a deterministic tar layer: entries in the order added,
// owner 0:0, mtime 0, parent folders added before their contents.
type layerWriter struct {
	tw   *tar.Writer
	dirs map[string]bool
}

var epoch = time.Unix(0, 0)

func newLayerWriter(w io.Writer) *layerWriter {
	return &layerWriter{tw: tar.NewWriter(w), dirs: map[string]bool{}}
}

func (l *layerWriter) parents(p string) error {
	d := filepath.Dir(p)
	if d == "." || d == "/" || l.dirs[d] {
		return nil
	}
	if err := l.parents(d); err != nil {
		return err
	}
	return l.dir(d, 0o755)
}

func (l *layerWriter) dir(p string, mode int64) error {
	if l.dirs[p] {
		return nil
	}
	l.dirs[p] = true
	return l.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: mode, ModTime: epoch, Format: tar.FormatPAX})
}

func (l *layerWriter) file(p string, mode int64, data []byte) error {
	if err := l.parents(p); err != nil {
		return err
	}
	if err := l.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := l.tw.Write(data)
	return err
}

func (l *layerWriter) fileFrom(p string, mode int64, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := l.parents(p); err != nil {
		return err
	}
	if err := l.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: st.Size(), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err = io.Copy(l.tw, f)
	return err
}

func (l *layerWriter) symlink(p, target string) error {
	if err := l.parents(p); err != nil {
		return err
	}
	return l.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: p, Linkname: target, Mode: 0o777, ModTime: epoch, Format: tar.FormatPAX})
}

// tree adds the folder root (sorted walk); skip(rel) drops a path and,
// for a folder, everything under it. Hard links become copies; device
// nodes, sockets and pipes are left out.
func (l *layerWriter) tree(root string, skip func(rel string) bool) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		mode := int64(info.Mode().Perm())
		if info.Mode()&fs.ModeSticky != 0 {
			mode |= 0o1000
		}
		if info.Mode()&fs.ModeSetuid != 0 {
			mode |= 0o4000
		}
		if info.Mode()&fs.ModeSetgid != 0 {
			mode |= 0o2000
		}
		switch {
		case info.IsDir():
			return l.dir(rel, mode)
		case info.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return l.symlink(rel, t)
		case info.Mode().IsRegular():
			return l.fileFrom(rel, mode, p)
		}
		return nil
	})
}

func (l *layerWriter) close() error { return l.tw.Close() }

// writeLayer writes one layer tar to path with fill and returns it as a
// go-containerregistry layer (gzip at best speed when written out).
func writeLayer(path string, fill func(l *layerWriter) error) (v1.Layer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	lw := newLayerWriter(f)
	if err := fill(lw); err != nil {
		f.Close()
		return nil, fmt.Errorf("layer %s: %w", filepath.Base(path), err)
	}
	if err := lw.close(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return tarball.LayerFromFile(path, tarball.WithCompressionLevel(gzip.BestSpeed))
}

// baseLayerFiles is the small base every component image shares: users
// root, nobody and nonroot (65532), name lookup through files then DNS, the
// CA bundle of the node's Debian, and /tmp 1777.
func baseLayer(l *layerWriter, rootfs string) error {
	passwd := "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group := "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
	if err := l.file("etc/passwd", 0o644, []byte(passwd)); err != nil {
		return err
	}
	if err := l.file("etc/group", 0o644, []byte(group)); err != nil {
		return err
	}
	if err := l.file("etc/nsswitch.conf", 0o644, []byte("hosts: files dns\n")); err != nil {
		return err
	}
	if err := l.fileFrom("etc/ssl/certs/ca-certificates.crt", 0o644, filepath.Join(rootfs, "etc/ssl/certs/ca-certificates.crt")); err != nil {
		return err
	}
	return l.dir("tmp", 0o1777)
}

// slimSkip leaves out of kube-proxy's root filesystem what it never uses.
func slimSkip(rel string) bool {
	for _, p := range []string{"dev", "proc", "sys", "run", "tmp", "boot", "home", "root", "media", "mnt", "srv",
		"usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "usr/share/perl", "usr/share/perl5",
		"usr/lib/x86_64-linux-gnu/perl", "usr/lib/x86_64-linux-gnu/perl-base", "usr/lib/x86_64-linux-gnu/perl5",
		"var/cache", "var/lib/apt", "var/lib/dpkg", "var/log", "usr/lib/systemd", "lib/systemd", "etc/systemd"} {
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}

// iptablesCommands are the commands kube-proxy runs; in its image each is a
// link to the iptables-wrapper that picks legacy or nft on first use.
var iptablesCommands = []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"}

func isIptablesCommand(rel string) bool {
	c, ok := strings.CutPrefix(rel, "usr/sbin/")
	return ok && slices.Contains(iptablesCommands, c)
}

// writeComponentImages writes every image of imgs into one docker-archive at
// out (what ctr import and kind's image-archive loading take), with the
// manifest's RepoTags exactly as given. work holds the layer tars.
func writeComponentImages(imgs []ComponentImage, rootfs, work, out string) error {
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	base, err := writeLayer(filepath.Join(work, "base.tar"), func(l *layerWriter) error { return baseLayer(l, rootfs) })
	if err != nil {
		return err
	}
	var slim v1.Layer
	refs := map[name.Reference]v1.Image{}
	for i, im := range imgs {
		layers := []v1.Layer{base}
		if im.Slim {
			if slim == nil {
				slim, err = writeLayer(filepath.Join(work, "slim-rootfs.tar"), func(l *layerWriter) error {
					if err := l.tree(rootfs, func(rel string) bool { return slimSkip(rel) || isIptablesCommand(rel) }); err != nil {
						return err
					}
					wrapper, err := assets.ReadFile("files/iptables-wrapper")
					if err != nil {
						return err
					}
					if err := l.file("usr/sbin/iptables-wrapper", 0o755, wrapper); err != nil {
						return err
					}
					for _, c := range iptablesCommands {
						if err := l.symlink("usr/sbin/"+c, "iptables-wrapper"); err != nil {
							return err
						}
					}
					return l.dir("tmp", 0o1777)
				})
				if err != nil {
					return err
				}
			}
			layers = []v1.Layer{slim}
		}
		top, err := writeLayer(filepath.Join(work, fmt.Sprintf("image-%d.tar", i)), func(l *layerWriter) error {
			for _, k := range slices.Sorted(maps.Keys(im.Files)) {
				if err := l.fileFrom(k, 0o755, im.Files[k]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		img, err := mutate.AppendLayers(empty.Image, append(layers, top)...)
		if err != nil {
			return err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", "amd64"
		cf.Created = v1.Time{Time: epoch}
		cf.Config.Env = []string{imagePath}
		cf.Config.Entrypoint = im.Entrypoint
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			return err
		}
		for _, t := range im.Tags {
			tag, err := name.NewTag(t, name.StrictValidation)
			if err != nil {
				return err
			}
			refs[tag] = img
		}
	}
	if err := tarball.MultiRefWriteToFile(out, refs); err != nil {
		return err
	}
	return checkRepoTags(out, AllTags(imgs))
}

// checkRepoTags fails unless the archive's manifest names exactly want (the
// tarball writer is known to rewrite docker.io names; kubelet matches tags
// byte for byte).
func checkRepoTags(archive string, want []string) error {
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(archive) })
	if err != nil {
		return err
	}
	var got []string
	for _, d := range m {
		got = append(got, d.RepoTags...)
	}
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		return fmt.Errorf("image archive %s has RepoTags %v, want exactly %v", archive, got, want)
	}
	return nil
}
