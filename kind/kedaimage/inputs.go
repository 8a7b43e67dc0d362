// Package kedaimage builds, with no registry, the images a kind cluster
// needs to run KEDA, Prometheus and metrics-server: KEDA's operator,
// metrics API server and admission webhooks, compiled static
// (CGO_ENABLED=0) from the Go module github.com/kedacore/keda/v2 as served
// by the module proxy; metrics-server, compiled the same way from
// sigs.k8s.io/metrics-server (what the cluster's own
// HorizontalPodAutoscaler reads CPU utilisation from); and Debian's
// prometheus binary with the shared libraries it links. Each image is one
// layer on an empty base, written with go-containerregistry as a
// docker-archive tar (what kind's image-archive loading takes), as
// autoscaler/deploy/image writes scaleproof-ref's.
//
// Images are tagged by the hash of their inputs (module version, go
// version, GOOS/GOARCH, build flags; for Prometheus the package's version
// and the sha256 of every file that goes in) and never rebuilt while the
// cache dir holds an archive of that tag. autoscaler/deploy/render.KEDA,
// autoscaler/deploy/render.Prometheus and autoscaler/deploy/render.MetricsServer render the
// manifests for those tags. Each set (KEDA's three, Prometheus,
// metrics-server) has its own inputs and tag, so adding or changing one
// never invalidates another's cached archives.
//
// What it shells out to: go (env, mod download, build) and cp. Nothing else.
package kedaimage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// Revision changes whenever the recipe changes in a way the inputs do not
// show (another file in an image, another image config).
const Revision = 1

// Module and Version are the KEDA release built: v2.21.0 is the newest the
// module proxy serves, and its go.mod asks for go 1.26.0, which the
// project's Go 1.26 builds with GOTOOLCHAIN=local.
const (
	Module  = "github.com/kedacore/keda/v2"
	Version = "v2.21.0"
)

// Registry is the (never contacted) registry of every image built here.
const Registry = "scaleproof.local"

// Binary is one Go binary of a module and its image.
type Binary struct {
	Name       string // the image's short name: keda, keda-metrics-apiserver, keda-admission-webhooks, metrics-server
	Package    string // the main package inside the module: ./cmd/operator
	Entrypoint string // the path in the image, the one the manifests run: /keda
	// User is the image's numeric uid:gid; "" is 65532:65532 (distroless
	// nonroot, as KEDA's own images). Left out of the inputs' JSON when "",
	// so KEDA's hash is what it was before the field.
	User string `json:",omitempty"`
}

// Binaries are KEDA's three programs, named as KEDA's own images and
// manifests name them.
var Binaries = []Binary{
	{Name: "keda", Package: "./cmd/operator", Entrypoint: "/keda"},
	{Name: "keda-metrics-apiserver", Package: "./cmd/adapter", Entrypoint: "/keda-adapter"},
	{Name: "keda-admission-webhooks", Package: "./cmd/webhooks", Entrypoint: "/keda-admission-webhooks"},
}

// KEDAInputs is everything the KEDA images are made from. Its Hash tags them.
type KEDAInputs = GoInputs

// GoInputs is everything the images of one Go module's binaries are made
// from (KEDA's three; metrics-server's one). Its Hash tags them.
type GoInputs struct {
	Revision  int
	Module    string
	Version   string
	GoVersion string // go env GOVERSION of the toolchain that builds
	GOOS      string
	GOARCH    string
	Env       []string // CGO_ENABLED=0 GOTOOLCHAIN=local ...
	Flags     []string // go build's flags, -ldflags included
	Binaries  []Binary
}

// NewKEDAInputs are the inputs of a build of version with Go goVersion for
// linux/goarch.
func NewKEDAInputs(version, goVersion, goarch string) KEDAInputs {
	return KEDAInputs{
		Revision: Revision, Module: Module, Version: version, GoVersion: goVersion, GOOS: "linux", GOARCH: goarch,
		Env:      append([]string(nil), buildEnv...),
		Flags:    buildFlags(version),
		Binaries: append([]Binary(nil), Binaries...),
	}
}

// buildEnv is added to go build's environment: static, the local
// toolchain only (never a downloaded one), KEDA's module as the main module.
var buildEnv = []string{"CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOWORK=off", "GOFLAGS=-mod=mod"}

// buildFlags are go build's flags: -trimpath and KEDA's own version stamps
// (its Makefile's GO_LDFLAGS), stripped. -ldflags only changes linking, so
// a warm GOCACHE of the same sources is hit.
func buildFlags(version string) []string {
	return []string{"-trimpath", "-buildvcs=false", "-ldflags",
		"-s -w -X=github.com/kedacore/keda/v2/version.GitCommit=" + version + " -X=github.com/kedacore/keda/v2/version.Version=" + strings.TrimPrefix(version, "v")}
}

// Hash is the first 12 hex digits of the sha256 of the inputs' JSON.
func (in GoInputs) Hash() string { return hash(in) }

// Tag is the tag of every image of the module: <version without v>-<hash>,
// e.g. 2.21.0-0123456789ab.
func (in GoInputs) Tag() string { return strings.TrimPrefix(in.Version, "v") + "-" + in.Hash() }

// Ref is the full reference of one of the module's images:
// scaleproof.local/<name>:<tag>.
func (in GoInputs) Ref(name string) string { return Registry + "/" + name + ":" + in.Tag() }

// MetricsServerModule and MetricsServerVersion are the metrics-server
// release built: v0.8.0 (go 1.24.4 in its go.mod; builds with the
// project's Go 1.26, GOTOOLCHAIN=local). Its manifests are
// autoscaler/deploy/kube/components/metrics-server, from the same release.
const (
	MetricsServerModule  = "sigs.k8s.io/metrics-server"
	MetricsServerVersion = "v0.8.0"
)

// MetricsServerBinary is metrics-server's one program, at the path its own
// Dockerfile puts it (/metrics-server), running as 65534 (nobody) as that
// image does.
var MetricsServerBinary = Binary{Name: "metrics-server", Package: "./cmd/metrics-server", Entrypoint: "/metrics-server", User: "65534:65534"}

// NewMetricsServerInputs are the inputs of a build of metrics-server
// version with Go goVersion for linux/goarch.
func NewMetricsServerInputs(version, goVersion, goarch string) GoInputs {
	return GoInputs{
		Revision: Revision, Module: MetricsServerModule, Version: version, GoVersion: goVersion, GOOS: "linux", GOARCH: goarch,
		Env:      append([]string(nil), buildEnv...),
		Flags:    metricsServerFlags(version),
		Binaries: []Binary{MetricsServerBinary},
	}
}

// metricsServerFlags are metrics-server's Makefile's (its LDFLAGS stamp
// client-go's version package, which metrics-server reports), stripped.
func metricsServerFlags(version string) []string {
	return []string{"-trimpath", "-buildvcs=false", "-ldflags",
		"-s -w -X=k8s.io/client-go/pkg/version.gitVersion=" + version + " -X=k8s.io/client-go/pkg/version.gitCommit=" + version}
}

// PrometheusInputs is everything the Prometheus image is made from.
type PrometheusInputs struct {
	Revision int
	Version  string            // the binary's own version (prometheus --version), e.g. 2.42.0+ds
	Files    map[string]string // path in the image -> sha256 of its content
}

// Hash is the first 12 hex digits of the sha256 of the inputs' JSON.
func (in PrometheusInputs) Hash() string { return hash(in) }

// Tag is <version, Docker-safe>-<hash>, e.g. 2.42.0_ds-0123456789ab.
func (in PrometheusInputs) Tag() string { return tagSafe(in.Version) + "-" + in.Hash() }

// Ref is scaleproof.local/prometheus:<tag>.
func (in PrometheusInputs) Ref() string { return Registry + "/prometheus:" + in.Tag() }

func hash(v any) string {
	b, _ := json.Marshal(v) // maps are written with sorted keys
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12]
}

// tagSafe maps a version to the characters a Docker tag may hold.
func tagSafe(v string) string {
	var b strings.Builder
	for _, r := range v {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.TrimLeft(b.String(), ".-")
	if s == "" {
		s = "unknown"
	}
	if len(s) > 100 {
		s = s[:100]
	}
	return s
}
