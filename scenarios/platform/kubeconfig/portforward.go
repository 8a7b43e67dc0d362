package kubeconfig

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

func hostPort(h string, p int) string { return net.JoinHostPort(h, strconv.Itoa(p)) }

// forward port-forwards 127.0.0.1:<free port> to port 8080 of a ready pod of
// the Deployment name and returns the local base URL. Down stops it.
func (p *Platform) forward(ctx context.Context, name string) (string, error) {
	return p.forwardPort(ctx, name, 8080)
}

// forwardPort is forward to the pod's port podPort. One pod only: calls
// through it never reach the Deployment's other pods.
func (p *Platform) forwardPort(ctx context.Context, name string, podPort int) (string, error) {
	d, err := p.kc.AppsV1().Deployments(p.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("platform kubeconfig: port-forward: %w", err)
	}
	pods, err := p.kc.CoreV1().Pods(p.cfg.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.Set(d.Spec.Selector.MatchLabels).String()})
	if err != nil {
		return "", fmt.Errorf("platform kubeconfig: port-forward: list pods of %s: %w", name, err)
	}
	var pod string
	for _, po := range pods.Items {
		if po.DeletionTimestamp == nil && podReady(&po) {
			pod = po.Name
			break
		}
	}
	if pod == "" {
		return "", fmt.Errorf("platform kubeconfig: port-forward: no ready pod of %s", name)
	}
	rt, upgrader, err := spdy.RoundTripperFor(p.rest)
	if err != nil {
		return "", fmt.Errorf("platform kubeconfig: port-forward: %w", err)
	}
	u, err := url.Parse(p.rest.Host)
	if err != nil {
		return "", err
	}
	u.Path += fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/portforward", p.cfg.Namespace, pod)
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	stop, readyc := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(podPort)}, stop, readyc, io.Discard, io.Discard)
	if err != nil {
		return "", fmt.Errorf("platform kubeconfig: port-forward to %s: %w", pod, err)
	}
	errc := make(chan error, 1)
	go func() { errc <- fw.ForwardPorts() }()
	select {
	case <-readyc:
	case err := <-errc:
		return "", fmt.Errorf("platform kubeconfig: port-forward to %s: %w", pod, err)
	case <-time.After(30 * time.Second):
		close(stop)
		return "", fmt.Errorf("platform kubeconfig: port-forward to %s: not ready within 30 s", pod)
	case <-ctx.Done():
		close(stop)
		return "", ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		close(stop)
		return "", fmt.Errorf("platform kubeconfig: port-forward to %s: %v", pod, err)
	}
	p.mu.Lock()
	p.forwards = append(p.forwards, stop)
	p.mu.Unlock()
	p.log.Info("port-forward", "deployment", name, "pod", pod, "local", ports[0].Local)
	return "http://" + hostPort("127.0.0.1", int(ports[0].Local)), nil
}
