package kedaimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime"
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

// File is one file of an image: Path is absolute; Mode 0 means 0755.
type File struct {
	Path string
	Body []byte
	Mode int64
}

// Config is an image's runtime config.
type Config struct {
	Entrypoint []string
	User       string // numeric uid:gid
	Title      string // org.opencontainers.image.title
}

// nonroot is the conventional uid:gid of distroless images, which KEDA's
// own images use (its manifests set runAsNonRoot).
const nonroot = "65532:65532"

// writeArchive writes a docker-archive tar at p holding one image tagged
// ref: one layer with files (parent folders made, owner 0:0, mtime 0) and
// an empty /tmp (1777), config cfg, linux/GOARCH. The same files and ref
// give the same bytes. No archive is left half written.
func writeArchive(p, ref string, cfg Config, files []File) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("image %s: tag: %w", ref, err)
	}
	layerTar, err := layer(files)
	if err != nil {
		return fmt.Errorf("image %s: %w", ref, err)
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return fmt.Errorf("image %s: layer: %w", ref, err)
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return fmt.Errorf("image %s: append layer: %w", ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("image %s: config: %w", ref, err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = runtime.GOARCH, "linux"
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Entrypoint = cfg.Entrypoint
	cf.Config.User = cfg.User
	cf.Config.Env = []string{"PATH=/:/bin"}
	cf.Config.Labels = map[string]string{"org.opencontainers.image.title": cfg.Title, "org.opencontainers.image.version": tag.TagStr()}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return fmt.Errorf("image %s: set config: %w", ref, err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("image %s: write %s: %w", ref, p, err)
	}
	return os.Rename(tmp, p)
}

// layer is the image's one layer as an uncompressed tar, folders first.
func layer(files []File) ([]byte, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("no files")
	}
	dirs := map[string]bool{"tmp": true}
	seen := map[string]bool{}
	var fs []File
	for _, f := range files {
		p := strings.TrimPrefix(path.Clean(f.Path), "/")
		if !strings.HasPrefix(f.Path, "/") || p == "" || p == "tmp" || seen[p] {
			return nil, fmt.Errorf("file %q: want a new absolute path", f.Path)
		}
		if len(f.Body) == 0 {
			return nil, fmt.Errorf("file %s is empty", f.Path)
		}
		seen[p] = true
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
		f.Path = p
		fs = append(fs, f)
	}
	for p := range seen {
		if dirs[p] {
			return nil, fmt.Errorf("file /%s is also a folder", p)
		}
	}
	ds := slices.Sorted(maps.Keys(dirs))
	sort.Slice(fs, func(i, j int) bool { return fs[i].Path < fs[j].Path })
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	epoch := time.Unix(0, 0)
	for _, d := range ds {
		mode := int64(0o755)
		if d == "tmp" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: mode, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	for _, f := range fs {
		mode := f.Mode
		if mode == 0 {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Mode: mode, Size: int64(len(f.Body)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// checkArchive reports whether p is a docker-archive holding ref whose
// layers go-containerregistry can read: what Ensure trusts as cached.
func checkArchive(p, ref string) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return err
	}
	img, err := tarball.ImageFromPath(p, &tag)
	if err != nil {
		return err
	}
	if _, err := img.Manifest(); err != nil {
		return err
	}
	ls, err := img.Layers()
	if err != nil {
		return err
	}
	if len(ls) == 0 {
		return fmt.Errorf("%s: no layers", p)
	}
	return nil
}
