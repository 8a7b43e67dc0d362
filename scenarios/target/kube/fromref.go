package kube

import (
	"context"
	"errors"
	"fmt"
	"os"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/target"
)

// clients are one kubeconfig's typed and dynamic clients.
type clients struct {
	typed kubernetes.Interface
	dyn   dynamic.Interface
}

func clientsFrom(role, path string) (clients, error) {
	if path == "" {
		return clients{}, fmt.Errorf("no %s kubeconfig", role)
	}
	if _, err := os.Stat(path); err != nil {
		return clients{}, fmt.Errorf("%s kubeconfig: %w", role, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return clients{}, fmt.Errorf("%s kubeconfig %s: %w", role, path, err)
	}
	t, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return clients{}, fmt.Errorf("%s kubeconfig %s: %w", role, path, err)
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return clients{}, fmt.Errorf("%s kubeconfig %s: %w", role, path, err)
	}
	return clients{typed: t, dyn: d}, nil
}

// FromRef builds the Target a platform describes: the run's, the admin's
// and the viewer's clients from ref's three kubeconfig files, then NewHPA
// (ref.Kind "hpa") or NewKEDA ("keda", with ref.HPA as KEDA's HPA when
// set), with the default sync period and windows. It is an error, naming
// what, when ref is nil, a kubeconfig is missing or unreadable, or the kind
// is unknown ("console" is not built from a ref: use NewConsole).
func FromRef(ctx context.Context, ref *platform.TargetRef) (target.Target, error) {
	if ref == nil {
		return nil, errors.New("target: no target ref")
	}
	k, err := target.ParseKind(ref.Kind)
	if err != nil {
		return nil, err
	}
	if k == target.Console {
		return nil, errors.New("target console: built with NewConsole from the console's URL and keys, not from a target ref")
	}
	var cs [3]clients
	var errs []error
	for i, f := range []struct{ role, path string }{{"run", ref.Kubeconfig}, {"admin", ref.AdminKubeconfig}, {"viewer", ref.ViewerKubeconfig}} {
		if cs[i], err = clientsFrom(f.role, f.path); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("target %s: %w", k, err)
	}
	run, admin, viewer := cs[0], cs[1], cs[2]
	if k == target.HPA {
		return NewHPA(ctx, HPAConfig{Run: run.typed, Admin: admin.typed, Viewer: viewer.typed,
			Namespace: ref.Namespace, Deployment: ref.Deployment, HPA: ref.HPA})
	}
	return NewKEDA(ctx, KEDAConfig{Run: run.typed, Admin: admin.typed, Viewer: viewer.typed,
		RunDyn: run.dyn, AdminDyn: admin.dyn, ViewerDyn: viewer.dyn,
		Namespace: ref.Namespace, Deployment: ref.Deployment, ScaledObject: ref.ScaledObject, HPA: ref.HPA})
}
