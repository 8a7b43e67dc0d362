package kubeconfig

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

const (
	testNS  = "scaleproof-t"
	testImg = "scaleproof.local/scaleproof-ref:sha-0123456789ab"
)

// shardPod is the pod the Job controller would make for index i, in state.
func shardPod(job string, i int, status corev1.PodStatus) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d-abcde", job, i), Namespace: testNS,
		Labels:      map[string]string{deploykube.LoadShardLabel: job, batchv1.JobCompletionIndexAnnotation: strconv.Itoa(i)},
		Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: strconv.Itoa(i)}},
		Status: status}
}

var (
	succeeded = corev1.PodStatus{Phase: corev1.PodSucceeded}
	running   = corev1.PodStatus{Phase: corev1.PodRunning}
	oomKilled = corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: "shard",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}}}
	neverPull = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "shard",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: `image "x" is not present`}}}}}
)

// waitJob waits (bounded) until the runner has created the Job, as the Job
// controller would see it.
func waitJob(t *testing.T, kc *fake.Clientset, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := kc.BatchV1().Jobs(testNS).Get(ctx, name, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Errorf("job %s never created: %v", name, err)
	}
}

func TestRunLoadShards(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pods    []corev1.PodStatus // by index; the fake "controller" makes them once the Job exists
		timeout time.Duration
		want    []string // per index: "" ok, else a substring of Failure
	}{
		{"all succeed", []corev1.PodStatus{succeeded, succeeded, succeeded}, time.Minute, []string{"", "", ""}},
		{"one killed", []corev1.PodStatus{succeeded, oomKilled, succeeded}, time.Minute, []string{"", "OOMKilled (exit code 137)", ""}},
		{"image missing", []corev1.PodStatus{succeeded, succeeded, neverPull}, time.Minute, []string{"", "", "cannot start: ErrImageNeverPull"}},
		{"one never ends", []corev1.PodStatus{succeeded, running, succeeded}, time.Second, []string{"", "not finished within 1s (pod load-t-1-abcde Running)", ""}},
		{"no pod for one", []corev1.PodStatus{succeeded, succeeded}, time.Second, []string{"", "", "not finished within 1s (no pod made)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := fake.NewClientset(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: deploykube.EdgeName, Namespace: testNS}})
			r := &shardRunner{kc: kc, ns: testNS, image: testImg, poll: 10 * time.Millisecond,
				logs: func(_ context.Context, pod string) ([]byte, error) { return []byte("log of " + pod), nil }}
			const name = "load-t"
			go func() {
				waitJob(t, kc, name)
				for i, st := range tc.pods {
					if _, err := kc.CoreV1().Pods(testNS).Create(context.Background(), shardPod(name, i, st), metav1.CreateOptions{}); err != nil {
						t.Error(err)
					}
				}
			}()
			out, err := r.run(context.Background(), platform.ShardJob{Name: name, Shards: 3, Args: []string{"--shards=3"}, Timeout: tc.timeout})
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != 3 {
				t.Fatalf("%d outputs, want 3", len(out))
			}
			for i, o := range out {
				if o.Index != i {
					t.Errorf("output %d has index %d", i, o.Index)
				}
				switch want := tc.want[i]; {
				case want == "" && o.Failure != "":
					t.Errorf("shard %d: failure %q, want none", i, o.Failure)
				case want != "" && !strings.Contains(o.Failure, want):
					t.Errorf("shard %d: failure %q, want %q", i, o.Failure, want)
				}
				if o.Pod != "" && string(o.Log) != "log of "+o.Pod {
					t.Errorf("shard %d: log %q", i, o.Log)
				}
			}
			// what was created: the Job, Indexed, with the image and the args
			j, err := kc.BatchV1().Jobs(testNS).Get(context.Background(), name, metav1.GetOptions{})
			gaveUp := tc.timeout == time.Second || tc.name == "image missing" // a pod that cannot start: the Job is deleted
			switch {
			case gaveUp && !apierrors.IsNotFound(err):
				t.Errorf("a job given up on, or with a pod that cannot start, should be deleted (its pods stop): %v", err)
			case !gaveUp && err != nil:
				t.Fatal(err)
			case !gaveUp:
				c := j.Spec.Template.Spec.Containers[0]
				if *j.Spec.CompletionMode != batchv1.IndexedCompletion || c.Image != testImg || c.Args[0] != "--shards=3" {
					t.Errorf("job %+v", j.Spec)
				}
			}
			for _, get := range []func() error{
				func() error {
					_, err := kc.CoreV1().ConfigMaps(testNS).Get(context.Background(), name, metav1.GetOptions{})
					return err
				},
				func() error {
					_, err := kc.RbacV1().Roles(testNS).Get(context.Background(), name, metav1.GetOptions{})
					return err
				},
				func() error {
					_, err := kc.RbacV1().RoleBindings(testNS).Get(context.Background(), name, metav1.GetOptions{})
					return err
				},
				func() error {
					_, err := kc.CoreV1().ServiceAccounts(testNS).Get(context.Background(), name, metav1.GetOptions{})
					return err
				},
			} {
				if err := get(); err != nil {
					t.Errorf("object not created: %v", err)
				}
			}
		})
	}
}

func TestRunLoadShardsStop(t *testing.T) {
	kc := fake.NewClientset()
	r := &shardRunner{kc: kc, ns: testNS, image: testImg, poll: 10 * time.Millisecond,
		logs: func(context.Context, string) ([]byte, error) { return nil, nil }}
	const name = "load-s"
	stop := make(chan struct{})
	go func() {
		waitJob(t, kc, name)
		for i := range 2 {
			_, _ = kc.CoreV1().Pods(testNS).Create(context.Background(), shardPod(name, i, running), metav1.CreateOptions{})
		}
		close(stop) // the scenario stops its load early
		// the shards see the stop key and end: the pods succeed
		err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
			cm, err := kc.CoreV1().ConfigMaps(testNS).Get(ctx, name, metav1.GetOptions{})
			return err == nil && cm.Data[deploykube.LoadShardStopKey] != "", nil
		})
		if err != nil {
			t.Errorf("stop key never set: %v", err)
		}
		for i := range 2 {
			_, _ = kc.CoreV1().Pods(testNS).UpdateStatus(context.Background(), shardPod(name, i, succeeded), metav1.UpdateOptions{})
		}
	}()
	out, err := r.run(context.Background(), platform.ShardJob{Name: name, Shards: 2, Stop: stop, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.Failure != "" {
			t.Errorf("shard %d: %s", o.Index, o.Failure)
		}
	}
}

func TestRunLoadShardsBadJob(t *testing.T) {
	r := &shardRunner{kc: fake.NewClientset(), ns: testNS, image: testImg}
	for _, job := range []platform.ShardJob{
		{Name: "Bad_Name", Shards: 3, Timeout: time.Minute},
		{Name: "ok", Shards: 0, Timeout: time.Minute},
		{Name: "ok", Shards: 3},
	} {
		if _, err := r.run(context.Background(), job); err == nil {
			t.Errorf("job %+v: no error", job)
		}
	}
}

func TestShardEdgeURL(t *testing.T) {
	kc := fake.NewClientset(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: deploykube.EdgeName, Namespace: testNS},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.3.4", Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
	u, err := shardEdgeURL(context.Background(), kc, testNS)
	if err != nil || u != "http://10.96.3.4:80" {
		t.Errorf("got %q %v", u, err)
	}
	if _, err := shardEdgeURL(context.Background(), fake.NewClientset(), testNS); err == nil {
		t.Error("no Service: no error")
	}
}

func TestParseIndexes(t *testing.T) {
	for in, want := range map[string][]int{"": nil, "1": {1}, "1,3-5,7": {1, 3, 4, 5, 7}, "x,2": {2}, "5-3": nil} {
		if got := parseIndexes(in); !slices.Equal(got, want) {
			t.Errorf("parseIndexes(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestRunLoadShardsPodGone: a shard whose pod was deleted (the Job marks
// its index failed, no pod is left) is reported, not waited for.
func TestRunLoadShardsPodGone(t *testing.T) {
	kc := fake.NewClientset()
	r := &shardRunner{kc: kc, ns: testNS, image: testImg, poll: 10 * time.Millisecond,
		logs: func(context.Context, string) ([]byte, error) { return nil, nil }}
	const name = "load-g"
	go func() {
		waitJob(t, kc, name)
		_, _ = kc.CoreV1().Pods(testNS).Create(context.Background(), shardPod(name, 0, succeeded), metav1.CreateOptions{})
		j, err := kc.BatchV1().Jobs(testNS).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		failed := "1"
		j.Status.FailedIndexes = &failed
		_, _ = kc.BatchV1().Jobs(testNS).UpdateStatus(context.Background(), j, metav1.UpdateOptions{})
	}()
	out, err := r.run(context.Background(), platform.ShardJob{Name: name, Shards: 2, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Failure != "" || !strings.Contains(out[1].Failure, "its pod is gone") {
		t.Errorf("outputs %+v", out)
	}
}
