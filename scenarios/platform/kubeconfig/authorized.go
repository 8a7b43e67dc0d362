package kubeconfig

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/load"
	authv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Waiting until the cluster authorizes the run.
//
// A cluster's authorizer can lag behind the grant that lets the run in:
// on AKS with Azure RBAC for Kubernetes authorization, a role assignment
// "can take up to five minutes to propagate" (AKS docs, "Use Azure RBAC for
// Kubernetes authorization"); EKS access entries and GKE IAM grants also
// take a while. So Up first asks the API server, with a
// SelfSubjectAccessReview (Kubernetes docs, "Authorization": checking API
// access), whether the run may create namespaces, and waits while the answer
// is "not allowed" or the review itself is refused (401, 403), within a
// bound. Any other error (no server, TLS) fails at once: waiting would not
// fix it.

// authorizeInterval is how often the review is asked again.
const authorizeInterval = 5 * time.Second

// waitAuthorized asks kc whether it may create namespaces until it may, at
// most for timeout (0: 10 minutes), every authorizeInterval on clk (nil: the
// real clock; tests pass one that moves only when waited on), logging each
// refusal on log. The error says what the last answer was and what grant is
// missing.
func waitAuthorized(ctx context.Context, kc kubernetes.Interface, timeout time.Duration, clk load.Clock, log *slog.Logger) error {
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	if clk == nil {
		clk = load.SystemClock()
	}
	deadline := clk.Now().Add(timeout)
	for n := 1; ; n++ {
		rev, err := kc.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authv1.SelfSubjectAccessReview{
			Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{Verb: "create", Resource: "namespaces"}},
		}, metav1.CreateOptions{})
		var last string
		switch {
		case err == nil && rev.Status.Allowed:
			return nil
		case err == nil:
			last = fmt.Sprintf("not allowed to create namespaces (%s)", rev.Status.Reason)
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			last = err.Error()
		default:
			return fmt.Errorf("platform kubeconfig: ask the API server what the run may do: %w", err)
		}
		log.Info("waiting until the cluster authorizes the run", "review", n, "last", last, "next_in", authorizeInterval.String())
		if !clk.Now().Add(authorizeInterval).Before(deadline) {
			return fmt.Errorf("platform kubeconfig: the cluster did not authorize the run within %s (%d reviews; last: %s): "+
				"grant its identity cluster admin on the cluster (AKS with Azure RBAC: the role \"Azure Kubernetes Service RBAC Cluster Admin\"; "+
				"EKS: an access entry with AmazonEKSClusterAdminPolicy; GKE: roles/container.admin)", timeout, n, last)
		}
		t := clk.NewTimer(authorizeInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
	}
}
