package kubeconfig

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/scenarios/platform"
)

var _ platform.LoadSharder = (*Platform)(nil)

// ShardEdgeURL is the edge Service's cluster IP and port: where the
// shards' pods send their calls (no cluster DNS needed).
func (p *Platform) ShardEdgeURL(ctx context.Context) (string, error) {
	return shardEdgeURL(ctx, p.kc, p.cfg.Namespace)
}

func shardEdgeURL(ctx context.Context, kc kubernetes.Interface, ns string) (string, error) {
	svc, err := kc.CoreV1().Services(ns).Get(ctx, deploykube.EdgeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("platform kubeconfig: the edge Service %s/%s: %w", ns, deploykube.EdgeName, err)
	}
	ip := svc.Spec.ClusterIP
	if ip == "" || ip == corev1.ClusterIPNone || len(svc.Spec.Ports) == 0 {
		return "", fmt.Errorf("platform kubeconfig: the edge Service %s/%s has no cluster IP and port", ns, deploykube.EdgeName)
	}
	port := svc.Spec.Ports[0].Port
	for _, sp := range svc.Spec.Ports {
		if sp.Name == "http" {
			port = sp.Port
		}
	}
	host := ip
	if strings.Contains(ip, ":") {
		host = "[" + ip + "]"
	}
	return "http://" + host + ":" + strconv.Itoa(int(port)), nil
}

// RunLoadShards runs job as an Indexed Job in the platform's namespace,
// with the image the system runs (it holds the scaleproof binary), and
// returns every shard's log and fate (see platform.LoadSharder).
func (p *Platform) RunLoadShards(ctx context.Context, job platform.ShardJob) ([]platform.ShardOutput, error) {
	r := &shardRunner{kc: p.kc, ns: p.cfg.Namespace, image: p.cfg.Image, log: p.log}
	return r.run(ctx, job)
}

// shardRunner runs one distributed load: it creates the objects
// autoscaler/deploy/kube.LoadShardJob renders, watches the Job's pods until every
// index has ended, sets the stop ConfigMap when asked to, and reads each
// pod's log. The harness reads the logs (its own credentials); the pods
// may only get their stop ConfigMap.
type shardRunner struct {
	kc    kubernetes.Interface
	ns    string
	image string
	log   *slog.Logger
	// poll is the interval between two looks at the pods (default 1 s).
	poll time.Duration
	// logs reads a pod's log; nil: the API's pods/log.
	logs func(ctx context.Context, pod string) ([]byte, error)
}

// fatalWaiting are container waiting reasons a shard never recovers from
// (the image is never pulled: it is on the nodes or it is not).
var fatalWaiting = []string{"ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff", "InvalidImageName",
	"CreateContainerConfigError", "CreateContainerError", "RunContainerError"}

// maxShardLog bounds one shard's log as read back.
const maxShardLog int64 = 64 << 20

func (r *shardRunner) run(ctx context.Context, job platform.ShardJob) ([]platform.ShardOutput, error) {
	if r.poll <= 0 {
		r.poll = time.Second
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if job.Timeout <= 0 {
		return nil, errors.New("platform kubeconfig: load shards: no timeout")
	}
	doc, err := deploykube.LoadShardJob(deploykube.LoadShardParams{Name: job.Name, Namespace: r.ns, Image: r.image,
		Shards: job.Shards, Args: job.Args, Deadline: job.Timeout})
	if err != nil {
		return nil, fmt.Errorf("platform kubeconfig: %w", err)
	}
	if err := r.create(ctx, doc); err != nil {
		return nil, err
	}
	r.log.Info("load shards: job created", "job", job.Name, "shards", job.Shards, "timeout", job.Timeout.String())

	stopped := make(chan struct{})
	if job.Stop != nil {
		sctx, cancel := context.WithCancel(ctx)
		defer func() { cancel(); <-stopped }()
		go func() {
			defer close(stopped)
			select {
			case <-job.Stop:
				r.stop(sctx, job.Name)
			case <-sctx.Done():
			}
		}()
	} else {
		close(stopped)
	}

	out := make([]platform.ShardOutput, job.Shards)
	done := make([]bool, job.Shards)
	for i := range out {
		out[i].Index = i
	}
	created := time.Now()
	deadline := created.Add(job.Timeout)
	t := time.NewTicker(r.poll)
	defer t.Stop()
	var last string
	started := false
	for { // one pass per poll, bounded by job.Timeout
		var up int
		last, up = r.look(ctx, job.Name, out, done)
		if !started && up == job.Shards {
			started = true
			r.log.Info("load shards: every pod started", "job", job.Name, "after", time.Since(created).Round(100*time.Millisecond).String())
		}
		if !slices.Contains(done, false) {
			break
		}
		if !time.Now().Before(deadline) {
			r.giveUp(ctx, job.Name, out, done, fmt.Sprintf("not finished within %s", job.Timeout.Round(time.Second)))
			break
		}
		select {
		case <-ctx.Done():
			r.giveUp(context.WithoutCancel(ctx), job.Name, out, done, "the run was stopped: "+context.Cause(ctx).Error())
			return out, nil
		case <-t.C:
		}
	}
	r.log.Info("load shards: job ended", "job", job.Name, "state", last)
	defer func() { // a pod that cannot start stays Pending until the Job's deadline: end it
		for _, o := range out {
			if strings.Contains(o.Failure, " cannot start: ") {
				r.deleteJob(ctx, job.Name)
				return
			}
		}
	}()
	for i := range out {
		if out[i].Pod == "" {
			continue
		}
		b, err := r.readLog(ctx, out[i].Pod)
		if err != nil {
			if out[i].Failure == "" {
				out[i].Failure = fmt.Sprintf("log of pod %s not read: %v", out[i].Pod, err)
				if apierrors.IsNotFound(err) {
					out[i].Failure = fmt.Sprintf("pod %s is gone (deleted or evicted) before its log was read", out[i].Pod)
				}
			}
			continue
		}
		out[i].Log = b
	}
	return out, nil
}

// create makes the rendered objects in order.
func (r *shardRunner) create(ctx context.Context, doc []byte) error {
	for _, part := range bytes.Split(doc, []byte("\n---\n")) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(part, &tm); err != nil {
			return fmt.Errorf("platform kubeconfig: load shards: %w", err)
		}
		var err error
		switch tm.Kind {
		case "ConfigMap":
			err = createIn[corev1.ConfigMap](ctx, r.kc.CoreV1().ConfigMaps(r.ns), part)
		case "ServiceAccount":
			err = createIn[corev1.ServiceAccount](ctx, r.kc.CoreV1().ServiceAccounts(r.ns), part)
		case "Role":
			err = createIn[rbacv1.Role](ctx, r.kc.RbacV1().Roles(r.ns), part)
		case "RoleBinding":
			err = createIn[rbacv1.RoleBinding](ctx, r.kc.RbacV1().RoleBindings(r.ns), part)
		case "Job":
			err = createIn[batchv1.Job](ctx, r.kc.BatchV1().Jobs(r.ns), part)
		default:
			err = fmt.Errorf("unexpected kind %q", tm.Kind)
		}
		if err != nil {
			return fmt.Errorf("platform kubeconfig: load shards: create %s in %s: %w", tm.Kind, r.ns, err)
		}
	}
	return nil
}

// createIn decodes one YAML object, part, strictly into a T and creates it
// with c (a typed client of its kind in the namespace), FieldManager the
// field manager; it returns the decode's or the create's error.
func createIn[T any, C interface {
	Create(context.Context, *T, metav1.CreateOptions) (*T, error)
}](ctx context.Context, c C, part []byte) error {
	var o T
	if err := yaml.UnmarshalStrict(part, &o); err != nil {
		return err
	}
	_, err := c.Create(ctx, &o, metav1.CreateOptions{FieldManager: FieldManager})
	return err
}

// stop sets the stop key of the load's ConfigMap (a few tries, 1 s apart).
func (r *shardRunner) stop(ctx context.Context, name string) {
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{deploykube.LoadShardStopKey: time.Now().UTC().Format(time.RFC3339Nano)}})
	var err error
	for try := range 5 {
		if _, err = r.kc.CoreV1().ConfigMaps(r.ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err == nil {
			r.log.Info("load shards: stop set", "job", name)
			return
		}
		if try < 4 {
			t := time.NewTimer(time.Second)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
	r.log.Warn("load shards: stop not set; the shards run their whole profile", "job", name, "err", err)
}

// podIndex is a Job pod's completion index, or -1.
func podIndex(p *corev1.Pod) int {
	s, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		s, ok = p.Labels[batchv1.JobCompletionIndexAnnotation]
	}
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return i
}

// look reads the Job's pods once and settles the indexes that ended. It
// returns a one-line state for the log and how many shards' pods have
// started (running or ended).
func (r *shardRunner) look(ctx context.Context, name string, out []platform.ShardOutput, done []bool) (string, int) {
	pods, err := r.kc.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{LabelSelector: deploykube.LoadShardLabel + "=" + name})
	if err != nil {
		return "list pods: " + err.Error(), 0
	}
	up := 0
	for i := range done {
		if done[i] {
			up++
		}
	}
	var running, pending, succeeded, failed int
	for i := range pods.Items {
		po := &pods.Items[i]
		idx := podIndex(po)
		if idx < 0 || idx >= len(out) || done[idx] {
			continue
		}
		out[idx].Pod = po.Name
		switch po.Status.Phase {
		case corev1.PodSucceeded:
			done[idx] = true
			succeeded++
		case corev1.PodFailed:
			done[idx], out[idx].Failure = true, "pod "+po.Name+" failed: "+podFailure(po)
			failed++
		case corev1.PodRunning:
			running++
		default:
			if w := fatalWait(po); w != "" {
				done[idx], out[idx].Failure = true, "pod "+po.Name+" cannot start: "+w
				failed++
				continue
			}
			pending++
		}
	}
	if j, err := r.kc.BatchV1().Jobs(r.ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
		if j.Status.FailedIndexes != nil { // an index whose pod is gone (deleted, evicted) with no other look at it
			for _, i := range parseIndexes(*j.Status.FailedIndexes) {
				if i >= 0 && i < len(done) && !done[i] && !slices.ContainsFunc(pods.Items, func(po corev1.Pod) bool { return podIndex(&po) == i }) {
					done[i], out[i].Failure = true, "the Job marked it failed and its pod is gone (deleted or evicted)"
				}
			}
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue && c.Reason == batchv1.JobReasonDeadlineExceeded {
				for i := range done {
					if !done[i] {
						done[i], out[i].Failure = true, "the Job's deadline passed: "+c.Message
					}
				}
			}
		}
	}
	return fmt.Sprintf("%d running, %d pending, %d succeeded, %d failed this look", running, pending, succeeded, failed), up + running + succeeded + failed
}

// giveUp marks every open index failed with why (and the pod's state), and
// deletes the Job so that its pods stop.
func (r *shardRunner) giveUp(ctx context.Context, name string, out []platform.ShardOutput, done []bool, why string) {
	for i := range done {
		if done[i] {
			continue
		}
		done[i] = true
		state := "no pod made"
		if out[i].Pod != "" {
			state = "pod " + out[i].Pod
			if po, err := r.kc.CoreV1().Pods(r.ns).Get(ctx, out[i].Pod, metav1.GetOptions{}); err == nil {
				state += " " + podState(po)
			}
		}
		out[i].Failure = why + " (" + state + ")"
	}
	r.deleteJob(ctx, name)
}

// deleteJob deletes the Job and, in the background, its pods.
func (r *shardRunner) deleteJob(ctx context.Context, name string) {
	bg := metav1.DeletePropagationBackground
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.kc.BatchV1().Jobs(r.ns).Delete(dctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		r.log.Warn("load shards: delete job", "job", name, "err", err)
	}
}

func (r *shardRunner) readLog(ctx context.Context, pod string) ([]byte, error) {
	if r.logs != nil {
		return r.logs(ctx, pod)
	}
	lim := maxShardLog
	return r.kc.CoreV1().Pods(r.ns).GetLogs(pod, &corev1.PodLogOptions{Container: deploykube.LoadShardContainer, LimitBytes: &lim}).DoRaw(ctx)
}

// podFailure is why a failed pod failed: its container's termination
// (reason, exit code, message), else the pod's reason.
func podFailure(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			s := fmt.Sprintf("%s (exit code %d)", t.Reason, t.ExitCode)
			if msg := strings.TrimSpace(t.Message); msg != "" {
				s += ": " + msg
			}
			return s
		}
	}
	if p.Status.Reason != "" {
		return strings.TrimSpace(p.Status.Reason + ": " + p.Status.Message)
	}
	return "no reason given"
}

// fatalWait is a container waiting reason the pod will not get past, or "".
func fatalWait(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && slices.Contains(fatalWaiting, w.Reason) {
			return strings.TrimSpace(w.Reason + ": " + w.Message)
		}
	}
	return ""
}

// podState is a pod's phase and, when waiting, why.
func podState(p *corev1.Pod) string {
	s := string(p.Status.Phase)
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			s += ", " + w.Reason
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue && c.Message != "" {
			s += ", not scheduled: " + c.Message
		}
	}
	return s
}

// parseIndexes reads a Job's index list ("1,3-5,7"); what does not parse is
// left out.
func parseIndexes(s string) []int {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 100_000 {
				continue
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out
}
