package kubeconfig

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/scaleproof/scaleproof/scenarios/load"
	authv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestWaitAuthorized: Up waits while the cluster refuses the run (a grant
// still propagating: the review denied, or itself refused with 403), goes on
// as soon as it is allowed, gives up at the bound naming the grant, and
// fails at once on an error waiting cannot fix. The clock is injected and
// moves only when waited on; the bound is `deadline` intervals.
func TestWaitAuthorized(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}, "",
		errors.New(`User "33333333-3333-3333-3333-333333333333" does not have access to the resource in Azure`))
	for _, tc := range []struct {
		name     string
		answers  []any // per review: bool (allowed) or error; the last repeats
		deadline int   // the bound, in review intervals
		wantErr  string
		reviews  int
	}{
		{"allowed at once", []any{true}, 10, "", 1},
		{"denied, then the grant propagates", []any{false, false, false, true}, 10, "", 4},
		{"the review refused (403), then allowed", []any{forbidden, forbidden, true}, 10, "", 3},
		{"never allowed: the bound", []any{false}, 3, "Azure Kubernetes Service RBAC Cluster Admin", 3},
		{"no API server: at once", []any{errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")}, 10, "connection refused", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := fake.NewClientset()
			n := 0
			kc.PrependReactor("create", "selfsubjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
				a := tc.answers[min(n, len(tc.answers)-1)]
				n++
				if err, ok := a.(error); ok {
					return true, nil, err
				}
				return true, &authv1.SelfSubjectAccessReview{Status: authv1.SubjectAccessReviewStatus{Allowed: a.(bool), Reason: "no role assignment yet"}}, nil
			})
			clk := &stepClock{now: time.Unix(0, 0)}
			err := waitAuthorized(context.Background(), kc, time.Duration(tc.deadline)*authorizeInterval, clk, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if tc.wantErr == "" && err != nil {
				t.Fatalf("waitAuthorized: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("waitAuthorized: %v, want an error naming %q", err, tc.wantErr)
			}
			if n != tc.reviews {
				t.Errorf("%d reviews, want %d", n, tc.reviews)
			}
		})
	}
}

// stepClock moves only when waited on: a new timer moves it by its
// duration and has already fired.
type stepClock struct{ now time.Time }

func (c *stepClock) Now() time.Time { return c.now }
func (c *stepClock) NewTimer(d time.Duration) load.Timer {
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return firedTimer(ch)
}

type firedTimer chan time.Time

func (t firedTimer) C() <-chan time.Time { return t }
func (t firedTimer) Stop() bool          { return false }

// allowAll answers every SelfSubjectAccessReview "allowed", as a cluster
// whose grant is in place does (the fake clientset serves none itself).
func allowAll(kc *fake.Clientset) {
	kc.PrependReactor("create", "selfsubjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &authv1.SelfSubjectAccessReview{Status: authv1.SubjectAccessReviewStatus{Allowed: true}}, nil
	})
}
