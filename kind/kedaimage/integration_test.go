package kedaimage

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/autoscaler/deploy/image"
)

// TestBuildKEDA builds the real images (KEDA from the module proxy, tens of
// minutes from a cold build cache) into $SCALEPROOF_KEDA_CACHE_DIR (default
// ~/.cache/scaleproof/kedaimage, so a later run is warm): every binary is
// static, every archive loads with go-containerregistry's tarball reader
// under its ref, and a second Ensure is all cached. Runs only with
// SCALEPROOF_KEDA_BUILD=1, never under -short.
func TestBuildKEDA(t *testing.T) {
	if testing.Short() || os.Getenv("SCALEPROOF_KEDA_BUILD") != "1" {
		t.Skip("builds KEDA from its module (tens of minutes cold): set SCALEPROOF_KEDA_BUILD=1")
	}
	if _, err := os.Stat(debianPrometheus); err != nil {
		t.Skip("no Debian prometheus (make deps-prometheus)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
	defer cancel()
	o := Options{CacheDir: os.Getenv("SCALEPROOF_KEDA_CACHE_DIR"), Nice: 19, Log: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
	res, err := Ensure(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Steps {
		t.Logf("step %s: %.1f s (cached %v)", s.Name, s.Elapsed.Seconds(), s.Cached)
	}
	if len(res.Images) != 4 {
		t.Fatalf("images %+v, want 4", res.Images)
	}
	for _, im := range res.Images {
		t.Logf("%s %s %.1f MiB cached=%v", im.Name, im.Ref, float64(im.Size)/(1<<20), im.Cached)
		files := layerFiles(t, im.Archive, im.Ref)
		if im.Name == "prometheus" {
			if files["bin/prometheus"] == nil {
				t.Errorf("%s: no /bin/prometheus", im.Ref)
			}
			continue
		}
		var ep string
		for _, b := range Binaries {
			if b.Name == im.Name {
				ep = b.Entrypoint
			}
		}
		if files[ep[1:]] == nil {
			t.Errorf("%s: no %s", im.Ref, ep)
		}
	}
	in, _ := KEDA(ctx, o)
	for _, b := range in.Binaries {
		body, err := os.ReadFile(filepath.Join(o.CacheDirOrDefault(), "work", "bin-"+in.Tag(), filepath.Base(b.Package)))
		if err != nil {
			t.Fatal(err)
		}
		if err := image.CheckStatic(body); err != nil {
			t.Errorf("%s: %v", b.Package, err)
		}
	}
	again, err := Ensure(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range again.Images {
		if !im.Cached {
			t.Errorf("second Ensure rebuilt %s", im.Ref)
		}
	}
	t.Logf("cold %.1f s, warm %.1f s", res.Elapsed.Seconds(), again.Elapsed.Seconds())
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
