package kubeapply

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// Mapper maps kinds to resources through the API server's discovery,
// read lazily and cached (a kind unknown at first is looked up again).
func Mapper(d discovery.DiscoveryInterface) meta.RESTMapper {
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(d))
}

// Apply server-side applies objs in their order, as fieldManager, with
// Force (the objects are owned by whoever applies them). A namespaced
// object goes into its own metadata.namespace. The first failure stops it:
// an error naming the kind, namespace and name, wrapping the API's error.
func Apply(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, fieldManager string, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		if err := applyOne(ctx, dyn, mapper, fieldManager, o); err != nil {
			return err
		}
	}
	return nil
}

func applyOne(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, fieldManager string, o *unstructured.Unstructured) error {
	gvk := o.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("apply %s %s: %w", gvk.Kind, o.GetName(), err)
	}
	body, err := json.Marshal(o.Object)
	if err != nil {
		return fmt.Errorf("apply %s %s: %w", gvk.Kind, o.GetName(), err)
	}
	var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
	}
	force := true
	if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: fieldManager, Force: &force}); err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", gvk.Kind, o.GetNamespace(), o.GetName(), err)
	}
	return nil
}
