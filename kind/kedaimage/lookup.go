package kedaimage

import (
	"context"
	"fmt"
	"runtime"
	"strings"
)

// Lookup returns the images of the sets o asks for (all by default) that
// the cache dir already holds, in Ensure's order, building nothing and
// taking no lock (an archive is written whole or not at all). missing
// names each image whose archive is absent or unreadable, with its ref;
// err is for an unknown set or no go to ask the version of.
func Lookup(ctx context.Context, o Options) (res Result, missing []string, err error) {
	o.defaults()
	want, err := o.wants()
	if err != nil {
		return Result{}, nil, err
	}
	gv, err := GoVersion(ctx, o.Go)
	if err != nil {
		return Result{}, nil, err
	}
	b := &builder{o: o}
	check := func(name, ref, tag string) {
		im := Image{Name: name, Ref: ref, Archive: b.archivePath(name, tag), Cached: true}
		if err := checkArchive(im.Archive, ref); err != nil {
			missing = append(missing, fmt.Sprintf("%s (%s)", name, ref))
			return
		}
		res.Images = append(res.Images, sizes([]Image{im})...)
	}
	if want[SetKEDA] {
		in := NewKEDAInputs(o.Version, gv, runtime.GOARCH)
		for _, bin := range in.Binaries {
			check(bin.Name, in.Ref(bin.Name), in.Tag())
		}
	}
	if want[SetPrometheus] {
		files, err := PrometheusFiles("", o.Prometheus)
		if err != nil {
			missing = append(missing, "prometheus ("+err.Error()+")")
		} else if v, err := prometheusVersion(ctx, o.Prometheus); err != nil {
			missing = append(missing, "prometheus ("+err.Error()+")")
		} else {
			in := NewPrometheusInputs(v, files)
			check("prometheus", in.Ref(), in.Tag())
		}
	}
	if want[SetMetricsServer] {
		in := NewMetricsServerInputs(o.MetricsServerVersion, gv, runtime.GOARCH)
		check(MetricsServerBinary.Name, in.Ref(MetricsServerBinary.Name), in.Tag())
	}
	return res, missing, nil
}

// MissingError says which images a cache lacks and how to build them.
func MissingError(cacheDir string, missing []string) error {
	return fmt.Errorf("keda images: %s lacks %s (scaleproof kind keda-images builds them)", cacheDir, strings.Join(missing, ", "))
}
