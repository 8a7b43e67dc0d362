package kedaimage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/deploy/image"
	"github.com/scaleproof/scaleproof/kind/internal/buildstep"
)

// Options configure Ensure. Zero values take the defaults.
type Options struct {
	// CacheDir holds the image archives (images/), the build work (work/)
	// and the step logs (logs/); default ~/.cache/scaleproof/kedaimage.
	// Never inside the repository.
	CacheDir string
	// Version of KEDA; default Version.
	Version string
	// MetricsServerVersion of metrics-server; default MetricsServerVersion.
	MetricsServerVersion string
	// Only, when not empty, is the image sets to make sure of: SetKEDA,
	// SetPrometheus, SetMetricsServer (a --target hpa run needs only
	// metrics-server, not KEDA's long build). Empty: all three.
	Only []string
	// Prometheus is the prometheus binary packed with its libraries;
	// default /usr/bin/prometheus (Debian's, make deps-prometheus).
	Prometheus string
	// Go is the go command; default "go" on PATH.
	Go string
	// Nice, when > 0, runs go under `nice -n Nice` (the builds are large).
	Nice int
	Log  *slog.Logger
	Now  func() time.Time
}

// Image is one image Ensure made sure of.
type Image struct {
	Name    string // keda, keda-metrics-apiserver, keda-admission-webhooks, prometheus, metrics-server
	Ref     string // scaleproof.local/<name>:<tag>
	Archive string // the docker-archive tar (kind load image-archive)
	Size    int64  // the archive's bytes
	Cached  bool   // the archive was already there
}

// Result is what Ensure did.
type Result struct {
	Images  []Image
	Steps   []StepTime
	Elapsed time.Duration
	LogDir  string
}

// Ref returns the reference of the image called name ("" when none).
func (r Result) Ref(name string) string {
	for _, im := range r.Images {
		if im.Name == name {
			return im.Ref
		}
	}
	return ""
}

// Archives are the archive paths, in Images' order.
func (r Result) Archives() []string {
	var out []string
	for _, im := range r.Images {
		out = append(out, im.Archive)
	}
	return out
}

// DefaultCacheDir is ~/.cache/scaleproof/kedaimage (or under $XDG_CACHE_HOME).
func DefaultCacheDir() string { return filepath.Join(buildstep.CacheRoot(), "kedaimage") }

// StepError is a failed step: its name, how long it ran, its log file.
type StepError = buildstep.Error

// StepTime is how long one step took; Cached when it had nothing to do.
type StepTime = buildstep.Time

// stepCtx is what a step gets: its log file and a runner for tools.
type stepCtx = buildstep.Ctx

type builder struct {
	o     Options
	steps *buildstep.Runner
}

func (o *Options) defaults() {
	o.CacheDir = o.CacheDirOrDefault()
	if o.Version == "" {
		o.Version = Version
	}
	if o.MetricsServerVersion == "" {
		o.MetricsServerVersion = MetricsServerVersion
	}
	if o.Prometheus == "" {
		o.Prometheus = "/usr/bin/prometheus"
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// GoVersion asks goCmd for its version (go env GOVERSION), part of the
// KEDA images' inputs.
func GoVersion(ctx context.Context, goCmd string) (string, error) {
	c := exec.CommandContext(ctx, goCmd, "env", "GOVERSION")
	c.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	out, err := c.Output()
	if err != nil {
		return "", fmt.Errorf("keda images: %s env GOVERSION: %w (Go builds KEDA)", goCmd, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// KEDA returns the inputs of the KEDA images for o (no build): their tags.
func KEDA(ctx context.Context, o Options) (KEDAInputs, error) {
	o.defaults()
	gv, err := GoVersion(ctx, o.Go)
	if err != nil {
		return KEDAInputs{}, err
	}
	return NewKEDAInputs(o.Version, gv, runtime.GOARCH), nil
}

// MetricsServer returns the inputs of the metrics-server image for o (no
// build): its tag.
func MetricsServer(ctx context.Context, o Options) (GoInputs, error) {
	o.defaults()
	gv, err := GoVersion(ctx, o.Go)
	if err != nil {
		return GoInputs{}, err
	}
	return NewMetricsServerInputs(o.MetricsServerVersion, gv, runtime.GOARCH), nil
}

// The image sets of Options.Only.
const (
	SetKEDA          = "keda"           // keda, keda-metrics-apiserver, keda-admission-webhooks
	SetPrometheus    = "prometheus"     // prometheus
	SetMetricsServer = "metrics-server" // metrics-server
)

// Sets are every image set, in the order Ensure returns their images.
var Sets = []string{SetKEDA, SetPrometheus, SetMetricsServer}

// wants reports which sets o asks for; an unknown name is an error.
func (o Options) wants() (map[string]bool, error) {
	w := map[string]bool{}
	if len(o.Only) == 0 {
		for _, s := range Sets {
			w[s] = true
		}
		return w, nil
	}
	for _, s := range o.Only {
		if !slices.Contains(Sets, s) {
			return nil, fmt.Errorf("keda images: image set %q: want one of %s", s, strings.Join(Sets, ", "))
		}
		w[s] = true
	}
	return w, nil
}

// Ensure makes sure the cache dir holds the archives of the image sets o
// asks for (all by default: KEDA's three images, Prometheus's and
// metrics-server's), and returns them (KEDA's in Binaries' order, then
// Prometheus's, then metrics-server's; on an error, those made so far). An
// archive already there that go-containerregistry reads under its tag is
// kept; else the Go module (KEDA's, metrics-server's) is downloaded (go
// mod download), copied to work/src-… and built there as the main module
// (its own go.sum and replaces), static, the binaries checked static and
// packed; Prometheus's binary is packed with its interpreter and
// libraries. Each step logs its time and has its own log file under logs/;
// a failed step is a *StepError naming its log. An unknown set in o.Only
// is an error before anything is built.
func Ensure(ctx context.Context, o Options) (Result, error) {
	o.defaults()
	start := o.Now()
	// a cold KEDA build is one go build of tens of minutes with no output
	// of its own: a running step logs once a minute
	b := &builder{o: o, steps: &buildstep.Runner{Dir: filepath.Join(o.CacheDir, "logs", start.UTC().Format("20060102-150405")),
		Topic: "keda images step", What: "keda images: step", Log: o.Log, Now: o.Now, Heartbeat: time.Minute}}
	res := Result{LogDir: b.steps.Dir}
	want, err := o.wants()
	if err != nil {
		return res, err
	}
	// one lock per image set, taken in Sets' order: a run that needs only
	// metrics-server never waits for another's long KEDA build
	for _, set := range Sets {
		if !want[set] {
			continue
		}
		unlock, err := lock(ctx, filepath.Join(o.CacheDir, "lock-"+set), func(msg string, a ...any) { o.Log.Info(msg, append(a, "set", set)...) })
		if err != nil {
			return res, fmt.Errorf("keda images: %w", err)
		}
		defer unlock()
	}
	done := func(err error) (Result, error) {
		res.Steps, res.Elapsed = b.steps.Times, o.Now().Sub(start)
		return res, err
	}
	gv, err := GoVersion(ctx, o.Go)
	if err != nil {
		return done(err)
	}
	// Shortest first: Prometheus takes seconds (and a host without it
	// fails before the long builds), metrics-server minutes, KEDA tens of
	// minutes.
	var prom Image
	if want[SetPrometheus] {
		if prom, err = b.prometheus(ctx); err != nil {
			return done(err)
		}
	}
	var ms []Image
	if want[SetMetricsServer] {
		if ms, err = b.goImages(ctx, "metrics-server", NewMetricsServerInputs(o.MetricsServerVersion, gv, runtime.GOARCH)); err != nil {
			return done(err)
		}
	}
	if want[SetKEDA] {
		imgs, err := b.goImages(ctx, "keda", NewKEDAInputs(o.Version, gv, runtime.GOARCH))
		res.Images = append(res.Images, imgs...)
		if err != nil {
			return done(err)
		}
	}
	if want[SetPrometheus] {
		res.Images = append(res.Images, prom)
	}
	res.Images = append(res.Images, ms...)
	return done(nil)
}

func (b *builder) archivePath(name, tag string) string {
	return filepath.Join(b.o.CacheDir, "images", name+"-"+tag+".tar")
}

// goImages makes sure of the images of in's binaries, its steps named
// <set>-source, <set>-build, <set>-images.
func (b *builder) goImages(ctx context.Context, set string, in GoInputs) ([]Image, error) {
	var imgs []Image
	all := true
	for _, bin := range in.Binaries {
		p := b.archivePath(bin.Name, in.Tag())
		im := Image{Name: bin.Name, Ref: in.Ref(bin.Name), Archive: p}
		if checkArchive(p, im.Ref) == nil {
			im.Cached = true
		} else {
			all = false
		}
		imgs = append(imgs, im)
	}
	if all {
		b.o.Log.Info(set+" images cached", "tag", in.Tag())
		b.steps.Skipped(set)
		return sizes(imgs), nil
	}
	work := filepath.Join(b.o.CacheDir, "work")
	src := filepath.Join(work, srcDirName(in))
	binDir := filepath.Join(work, binDirName(in))
	if err := b.steps.Run(ctx, set+"-source", func() bool { return exists(filepath.Join(src, ".complete")) }, func(sc *stepCtx) error {
		return moduleSource(sc, b.o, in, src)
	}); err != nil {
		return nil, err
	}
	if err := b.steps.Run(ctx, set+"-build", func() bool { return haveBinaries(binDir, in) }, func(sc *stepCtx) error {
		return moduleBuild(sc, b.o, in, src, binDir)
	}); err != nil {
		return nil, err
	}
	err := b.steps.Run(ctx, set+"-images", nil, func(sc *stepCtx) error {
		for i, bin := range in.Binaries {
			if imgs[i].Cached {
				continue
			}
			body, err := os.ReadFile(filepath.Join(binDir, filepath.Base(bin.Package)))
			if err != nil {
				return err
			}
			if err := image.CheckStatic(body); err != nil {
				return fmt.Errorf("%s: %w", bin.Package, err)
			}
			fmt.Fprintf(sc.Log, "%s: %d bytes, static\n", bin.Package, len(body))
			user := bin.User
			if user == "" {
				user = nonroot
			}
			cfg := Config{Entrypoint: []string{bin.Entrypoint}, User: user, Title: bin.Name}
			if err := writeArchive(imgs[i].Archive, imgs[i].Ref, cfg, []File{{Path: bin.Entrypoint, Body: body}}); err != nil {
				return err
			}
			fmt.Fprintf(sc.Log, "wrote %s (%s)\n", imgs[i].Archive, imgs[i].Ref)
		}
		return nil
	})
	return sizes(imgs), err
}

// srcDirName and binDirName are the work folders of in's module source
// and binaries: KEDA's src-<version> and bin-<tag> (as before other modules
// were built here), others' prefixed with the module's last element.
func srcDirName(in GoInputs) string {
	if in.Module == Module {
		return "src-" + in.Version
	}
	return "src-" + path.Base(in.Module) + "-" + in.Version
}

func binDirName(in GoInputs) string {
	if in.Module == Module {
		return "bin-" + in.Tag()
	}
	return "bin-" + path.Base(in.Module) + "-" + in.Tag()
}

// moduleSource downloads in's module and copies it, writable, to src.
func moduleSource(sc *stepCtx, o Options, in GoInputs, src string) error {
	out, err := sc.Output(os.TempDir(), []string{"GOTOOLCHAIN=local", "GOWORK=off", "GOFLAGS="}, o.Go, "mod", "download", "-json", in.Module+"@"+in.Version)
	if err != nil {
		return err
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		return fmt.Errorf("go mod download %s@%s: %w", in.Module, in.Version, err)
	}
	if m.Error != "" || m.Dir == "" {
		return fmt.Errorf("go mod download %s@%s: %s", in.Module, in.Version, m.Error)
	}
	tmp := src + ".tmp"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		return err
	}
	if err := sc.Cmd("", nil, "cp", "-r", m.Dir, tmp); err != nil {
		return err
	}
	if err := sc.Cmd("", nil, "chmod", "-R", "u+w", tmp); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), []byte(m.Dir+"\n"), 0o644); err != nil {
		return err
	}
	_ = os.RemoveAll(src)
	return os.Rename(tmp, src)
}

// moduleBuild builds in's binaries in one go build (they share the
// compile work) into binDir.
func moduleBuild(sc *stepCtx, o Options, in GoInputs, src, binDir string) error {
	tmp := binDir + ".tmp"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	env := append(append([]string(nil), in.Env...), "GOOS="+in.GOOS, "GOARCH="+in.GOARCH)
	args := append([]string{"build"}, in.Flags...)
	args = append(args, "-o", tmp+string(filepath.Separator))
	for _, bin := range in.Binaries {
		args = append(args, bin.Package)
	}
	name := o.Go
	if o.Nice > 0 {
		args = append([]string{"-n", fmt.Sprint(o.Nice), o.Go}, args...)
		name = "nice"
	}
	if err := sc.Cmd(src, env, name, args...); err != nil {
		return err
	}
	_ = os.RemoveAll(binDir)
	return os.Rename(tmp, binDir)
}

func haveBinaries(dir string, in GoInputs) bool {
	for _, bin := range in.Binaries {
		if !exists(filepath.Join(dir, filepath.Base(bin.Package))) {
			return false
		}
	}
	return true
}

var promVersionRE = regexp.MustCompile(`(?m)^prometheus, version (\S+)`)

// prometheusVersion is the binary's own version (prometheus --version).
func prometheusVersion(ctx context.Context, bin string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("prometheus: %s --version: %w: %s", bin, err, out)
	}
	m := promVersionRE.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("prometheus: %s --version printed no version: %q", bin, out)
	}
	return string(m[1]), nil
}

// PrometheusFiles returns the files of the Prometheus image for the binary
// at bin: /bin/prometheus and, when it is dynamically linked, its
// interpreter and libraries at the paths its loader looks in. root
// prefixes every host path (tests); "" is the host.
func PrometheusFiles(root, bin string) ([]File, error) {
	body, err := os.ReadFile(filepath.Join(root, bin))
	if err != nil {
		return nil, fmt.Errorf("prometheus: %w (install Debian's with make deps-prometheus)", err)
	}
	files := []File{{Path: "/bin/prometheus", Body: body}}
	if image.CheckStatic(body) == nil {
		return files, nil
	}
	deps, err := sharedDeps(root, bin)
	if err != nil {
		return nil, fmt.Errorf("prometheus: %w", err)
	}
	for _, d := range deps {
		lb, err := os.ReadFile(filepath.Join(root, d))
		if err != nil {
			return nil, fmt.Errorf("prometheus: %w", err)
		}
		files = append(files, File{Path: d, Body: lb})
	}
	return files, nil
}

// NewPrometheusInputs are the inputs of the image of files, version being
// the binary's own.
func NewPrometheusInputs(version string, files []File) PrometheusInputs {
	in := PrometheusInputs{Revision: Revision, Version: version, Files: map[string]string{}}
	for _, f := range files {
		sum := sha256.Sum256(f.Body)
		in.Files[f.Path] = hex.EncodeToString(sum[:])
	}
	return in
}

func (b *builder) prometheus(ctx context.Context) (Image, error) {
	files, err := PrometheusFiles("", b.o.Prometheus)
	if err != nil {
		return Image{}, err
	}
	v, err := prometheusVersion(ctx, b.o.Prometheus)
	if err != nil {
		return Image{}, err
	}
	in := NewPrometheusInputs(v, files)
	im := Image{Name: "prometheus", Ref: in.Ref(), Archive: b.archivePath("prometheus", in.Tag())}
	if checkArchive(im.Archive, im.Ref) == nil {
		im.Cached = true
		b.o.Log.Info("prometheus image cached", "ref", im.Ref)
		b.steps.Skipped("prometheus-image")
		return sizes([]Image{im})[0], nil
	}
	err = b.steps.Run(ctx, "prometheus-image", nil, func(sc *stepCtx) error {
		for _, f := range files {
			fmt.Fprintf(sc.Log, "%s: %d bytes\n", f.Path, len(f.Body))
		}
		// 65534 (nobody), as Prometheus's own image runs.
		return writeArchive(im.Archive, im.Ref, Config{Entrypoint: []string{"/bin/prometheus"}, User: "65534:65534", Title: "prometheus"}, files)
	})
	return sizes([]Image{im})[0], err
}

func sizes(imgs []Image) []Image {
	for i := range imgs {
		if st, err := os.Stat(imgs[i].Archive); err == nil {
			imgs[i].Size = st.Size()
		}
	}
	return imgs
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// CacheDirOrDefault is the cache dir Ensure uses for o.
func (o Options) CacheDirOrDefault() string {
	if o.CacheDir == "" {
		return DefaultCacheDir()
	}
	return o.CacheDir
}
