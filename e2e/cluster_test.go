//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authzv1 "k8s.io/api/authorization/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/scaleproof/scaleproof/autoscaler/controller/kube"
	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
)

// load sends tools/call through the edge to zone from n goroutines until
// stop is called; it returns the counts by status (0: transport error).
type load struct {
	stop  func()
	wg    sync.WaitGroup
	mu    sync.Mutex
	codes map[int]int
}

func startLoad(zone string, n int, limit time.Duration) *load {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	l := &load{stop: cancel, codes: map[int]int{}}
	for i := range n {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for id := 0; ctx.Err() == nil; id++ {
				code := call(ctx, zone, i*1_000_000+id)
				if code == 0 && ctx.Err() != nil {
					return
				}
				l.mu.Lock()
				l.codes[code]++
				l.mu.Unlock()
			}
		}()
	}
	return l
}

func (l *load) end() map[int]int {
	l.stop()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.codes
}

// routed waits until a call through the edge to zone answers 200 (the
// edge has seen the zone's ready workers), as the scenarios do before load.
func routed(ctx context.Context, zone string) {
	GinkgoHelper()
	Eventually(func() int { return call(ctx, zone, 0) }).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Equal(200))
}

// call makes one tools/call through the edge and returns its status (0: a
// transport error).
func call(ctx context.Context, zone string, id int) int {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"work","arguments":{"ms":100}}}`, id)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ep.EdgeURL+"/g/"+group+"/z/"+zone+"/mcp", bytes.NewBufferString(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+ep.Keys.MCPUser.Key)
	resp, err := callClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

var callClient = &http.Client{Timeout: 10 * time.Second}

func workerPods(ctx context.Context, zone string) []corev1.Pod {
	GinkgoHelper()
	sel := labels.Set{kube.LabelGroup: group, kube.LabelZone: zone, kube.LabelComponent: kube.ComponentWorker}.String()
	l, err := pf.Client().CoreV1().Pods(pf.Namespace()).List(ctx, metav1.ListOptions{LabelSelector: sel})
	Expect(err).NotTo(HaveOccurred())
	return l.Items
}

func readyPods(ctx context.Context, zone string) int {
	n := 0
	for _, p := range workerPods(ctx, zone) {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
				n++
			}
		}
	}
	return n
}

func zoneCount(ctx context.Context, zone string) int {
	GinkgoHelper()
	z, code, err := cc.GetZone(ctx, ep.Keys.GroupAdmin.Key, group, zone)
	Expect(err).NotTo(HaveOccurred())
	Expect(code).To(Equal(200))
	return z.Count
}

// scheduler turns the auto-rebalance scheduler on or off (the scenarios
// leave it on; specs that pin a count turn it off).
func scheduler(ctx context.Context, on bool) {
	GinkgoHelper()
	code, err := cc.SetAutorebalance(ctx, ep.Keys.SuperAdmin.Key, consoleclient.Autorebalance{Enabled: on, IntervalSeconds: prof.SchedulerInterval.Seconds()})
	Expect(err).NotTo(HaveOccurred())
	Expect(code).To(Equal(200))
}

var _ = Describe("the console on Kubernetes", Ordered, func() {
	It("refuses the viewer key a max change, through the API", func(ctx SpecContext) {
		zone := zoneName("viewer")
		createZone(ctx, zone, 2)
		code, err := cc.PutZone(ctx, ep.Keys.Viewer.Key, group, zone, consoleclient.Update{MaxCount: ptr(3)})
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(http.StatusForbidden))
		z, _, err := cc.GetZone(ctx, ep.Keys.GroupAdmin.Key, group, zone)
		Expect(err).NotTo(HaveOccurred())
		Expect(*z.MaxCount).To(Equal(2))
	})

	It("runs as a ServiceAccount that may do what the console needs and nothing else", func(ctx SpecContext) {
		user := "system:serviceaccount:" + pf.Namespace() + ":" + deploykube.ConsoleName
		can := func(verb, grp, res, sub, ns string) bool {
			GinkgoHelper()
			r, err := pf.Client().AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{
				Spec: authzv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts"},
					ResourceAttributes: &authzv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: grp, Resource: res, Subresource: sub}},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			return r.Status.Allowed
		}
		ns := pf.Namespace()
		for _, a := range [][4]string{
			{"update", "apps", "deployments", "scale"}, {"create", "apps", "deployments", ""}, {"patch", "", "pods", ""},
			{"list", "discovery.k8s.io", "endpointslices", ""}, {"update", "", "configmaps", ""},
			{"update", "coordination.k8s.io", "leases", ""}, {"delete", "autoscaling", "horizontalpodautoscalers", ""},
		} {
			Expect(can(a[0], a[1], a[2], a[3], ns)).To(BeTrue(), "%v in the namespace", a)
		}
		for _, a := range [][4]string{
			{"delete", "", "pods", ""}, {"get", "", "secrets", ""}, {"list", "", "secrets", ""},
			{"delete", "apps", "deployments", ""}, {"update", "apps", "deployments", ""}, {"create", "rbac.authorization.k8s.io", "roles", ""},
			{"create", "autoscaling", "horizontalpodautoscalers", ""}, {"delete", "", "configmaps", ""}, {"create", "", "pods", "exec"},
		} {
			Expect(can(a[0], a[1], a[2], a[3], ns)).To(BeFalse(), "%v in the namespace", a)
		}
		Expect(can("get", "apps", "deployments", "", "kube-system")).To(BeFalse(), "another namespace")
		Expect(can("list", "", "nodes", "", "")).To(BeFalse(), "cluster-wide")
	})

	It("deletes an HPA left on a worker Deployment, and audits it", func(ctx SpecContext) {
		zone := zoneName("hpa")
		createZone(ctx, zone, 2)
		name, err := kube.DeploymentName(group, zone)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			_, err := pf.Client().AppsV1().Deployments(pf.Namespace()).Get(ctx, name, metav1.GetOptions{})
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
		hpas := pf.Client().AutoscalingV2().HorizontalPodAutoscalers(pf.Namespace())
		_, err = hpas.Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "left-by-an-older-release"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: ptr(int32(1)), MaxReplicas: 5,
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() bool {
			_, err := hpas.Get(ctx, "left-by-an-older-release", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(45 * time.Second).WithPolling(time.Second).Should(BeTrue())
		Eventually(func() []string {
			es, _, err := cc.Audit(ctx, ep.Keys.SuperAdmin.Key, group, zone)
			Expect(err).NotTo(HaveOccurred())
			var acts []string
			for _, e := range es {
				acts = append(acts, e.Action)
			}
			return acts
		}).WithTimeout(15 * time.Second).Should(ContainElement("workers.hpa_removed"))
	})

	It("replaces a worker pod deleted under load and keeps the count", func(ctx SpecContext) {
		scheduler(ctx, false)
		zone := zoneName("podkill")
		createZone(ctx, zone, 3)
		code, err := cc.PutZone(ctx, ep.Keys.GroupAdmin.Key, group, zone, consoleclient.Update{Count: ptr(2)})
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(200))
		Eventually(func() int { return readyPods(ctx, zone) }).WithTimeout(60 * time.Second).Should(Equal(2))
		routed(ctx, zone)
		l := startLoad(zone, 8, 2*time.Minute)
		victim := workerPods(ctx, zone)[0]
		Expect(pf.Client().CoreV1().Pods(pf.Namespace()).Delete(ctx, victim.Name, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool {
			pods := workerPods(ctx, zone)
			for _, p := range pods {
				if p.UID == victim.UID {
					return false
				}
			}
			return readyPods(ctx, zone) == 2
		}).WithTimeout(90 * time.Second).WithPolling(500 * time.Millisecond).Should(BeTrue())
		Expect(zoneCount(ctx, zone)).To(Equal(2))
		codes := l.end()
		Expect(codes[200]).To(BeNumerically(">", 0))
		GinkgoWriter.Printf("calls while a worker pod was replaced: %v\n", codes)
	})

	It("scales in the pod the policy chose (pod-deletion-cost on the ReplicaSet's pick)", func(ctx SpecContext) {
		scheduler(ctx, false)
		zone := zoneName("victim")
		createZone(ctx, zone, 3)
		code, err := cc.PutZone(ctx, ep.Keys.GroupAdmin.Key, group, zone, consoleclient.Update{Count: ptr(3)})
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(200))
		Eventually(func() int { return readyPods(ctx, zone) }).WithTimeout(60 * time.Second).Should(Equal(3))

		// Record each worker pod's deletion cost at the moment it starts terminating.
		w, err := pf.Client().CoreV1().Pods(pf.Namespace()).Watch(ctx, metav1.ListOptions{
			LabelSelector: labels.Set{kube.LabelZone: zone}.String()})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()
		var mu sync.Mutex
		removed := map[types.UID]string{}
		go func() {
			for ev := range w.ResultChan() {
				if p, ok := ev.Object.(*corev1.Pod); ok && p.DeletionTimestamp != nil {
					mu.Lock()
					if _, seen := removed[p.UID]; !seen {
						removed[p.UID] = p.Annotations[kube.AnnotationDeletionCost]
					}
					mu.Unlock()
				}
			}
		}()
		// No load: the scheduler steps down after its low rounds and cooldown.
		scheduler(ctx, true)
		DeferCleanup(func(ctx SpecContext) { scheduler(ctx, false) })
		Eventually(func() int { return zoneCount(ctx, zone) }).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(BeNumerically("<", 3))
		Eventually(func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(removed)
		}).WithTimeout(60 * time.Second).Should(BeNumerically(">=", 3-zoneCount(ctx, zone)))
		mu.Lock()
		defer mu.Unlock()
		for uid, cost := range removed {
			Expect(cost).To(Equal(kube.VictimDeletionCost), "pod %s went without the policy's mark", uid)
		}
	})

	It("rolls the console under load without dropping /readyz, a call or any state", func(ctx SpecContext) {
		scheduler(ctx, false)
		zone := zoneName("rollout")
		createZone(ctx, zone, 3)
		code, err := cc.PutZone(ctx, ep.Keys.GroupAdmin.Key, group, zone, consoleclient.Update{Count: ptr(2)})
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(200))
		before, _, err := cc.GetZone(ctx, ep.Keys.GroupAdmin.Key, group, zone)
		Expect(err).NotTo(HaveOccurred())
		auditBefore, _, err := cc.Audit(ctx, ep.Keys.SuperAdmin.Key, group, zone)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { return readyPods(ctx, zone) }).WithTimeout(60 * time.Second).Should(Equal(2))
		routed(ctx, zone)

		l := startLoad(zone, 8, 5*time.Minute)
		var readyzFail, readyzOK atomic.Int64
		pctx, stopPoll := context.WithCancel(ctx)
		polled := make(chan struct{})
		go func() {
			defer close(polled)
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-pctx.Done():
					return
				case <-t.C:
				}
				if c, err := cc.Readyz(pctx); err == nil && c == 200 {
					readyzOK.Add(1)
				} else if pctx.Err() == nil {
					readyzFail.Add(1)
				}
			}
		}()
		deps := pf.Client().AppsV1().Deployments(pf.Namespace())
		patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"scaleproof.dev/restarted-at":%q}}}}}`, time.Now().Format(time.RFC3339Nano))
		start := time.Now()
		_, err = deps.Patch(ctx, deploykube.ConsoleName, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() bool {
			d, err := deps.Get(ctx, deploykube.ConsoleName, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			s := d.Status
			return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == 1 && s.Replicas == 1 && s.AvailableReplicas == 1
		}).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(BeTrue())
		took := time.Since(start)
		stopPoll()
		<-polled
		codes := l.end()
		GinkgoWriter.Printf("console rollout: %s; /readyz ok %d failed %d; calls %v\n", took, readyzOK.Load(), readyzFail.Load(), codes)
		Expect(readyzFail.Load()).To(BeZero())
		Expect(codes[0]).To(BeZero(), "transport errors")
		for c, n := range codes {
			Expect(c < 500 || n == 0).To(BeTrue(), "%d calls got %d", n, c)
		}

		after, _, err := cc.GetZone(ctx, ep.Keys.GroupAdmin.Key, group, zone)
		Expect(err).NotTo(HaveOccurred())
		Expect(after.Count).To(Equal(before.Count))
		Expect(*after.MaxCount).To(Equal(*before.MaxCount))
		auditAfter, _, err := cc.Audit(ctx, ep.Keys.SuperAdmin.Key, group, zone)
		Expect(err).NotTo(HaveOccurred())
		Expect(len(auditAfter)).To(BeNumerically(">=", len(auditBefore)))
		Expect(auditAfter[len(auditAfter)-len(auditBefore):]).To(Equal(auditBefore))

		lease, err := pf.Client().CoordinationV1().Leases(pf.Namespace()).Get(ctx, deploykube.LeaseName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		pods, err := pf.Client().CoreV1().Pods(pf.Namespace()).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=console"})
		Expect(err).NotTo(HaveOccurred())
		var live []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				live = append(live, p.Name)
			}
		}
		Expect(live).To(HaveLen(1))
		Eventually(func() string {
			l, err := pf.Client().CoordinationV1().Leases(pf.Namespace()).Get(ctx, deploykube.LeaseName, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			return *l.Spec.HolderIdentity
		}).WithTimeout(30*time.Second).Should(Equal(live[0]), "the new pod holds the scheduler's Lease (was %s)", *lease.Spec.HolderIdentity)
	})
})
