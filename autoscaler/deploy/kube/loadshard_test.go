package kube_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	deploykube "github.com/scaleproof/scaleproof/autoscaler/deploy/kube"
)

func TestLoadShardJob(t *testing.T) {
	args := []string{"--shards=3", "--start=2026-12-01T12:00:00Z", `--args={"ms":100, "q":"it's \"x\""}`, "--url=http://10.96.0.5:80/g/a/z/b/mcp"}
	p := deploykube.LoadShardParams{Name: "load-burst-1a2b", Namespace: "scaleproof-run1", Image: "scaleproof.local/scaleproof-ref:sha-0123456789ab",
		Shards: 3, Args: args, Deadline: 95*time.Second + time.Millisecond}
	out, err := deploykube.LoadShardJob(p)
	if err != nil {
		t.Fatal(err)
	}
	var (
		kinds []string
		job   batchv1.Job
		role  rbacv1.Role
		rb    rbacv1.RoleBinding
		cm    corev1.ConfigMap
		sa    corev1.ServiceAccount
	)
	for i, doc := range bytes.Split(out, []byte("\n---\n")) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		kinds = append(kinds, tm.Kind)
		var into any
		switch tm.Kind {
		case "Job":
			into = &job
		case "Role":
			into = &role
		case "RoleBinding":
			into = &rb
		case "ConfigMap":
			into = &cm
		case "ServiceAccount":
			into = &sa
		default:
			t.Fatalf("document %d: unexpected kind %q", i, tm.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, into); err != nil {
			t.Fatalf("%s: %v\n%s", tm.Kind, err, doc)
		}
	}
	if want := []string{"ConfigMap", "ServiceAccount", "Role", "RoleBinding", "Job"}; !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != 3 || *s.Parallelism != 3 {
		t.Errorf("job: completion mode %v, completions %v, parallelism %v; want Indexed, 3, 3", s.CompletionMode, s.Completions, s.Parallelism)
	}
	if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex != 0 || s.BackoffLimit != nil {
		t.Errorf("job: backoffLimitPerIndex %v, backoffLimit %v; want 0 and unset (a failed shard must not end the others)", s.BackoffLimitPerIndex, s.BackoffLimit)
	}
	if s.ActiveDeadlineSeconds == nil || *s.ActiveDeadlineSeconds != 96 {
		t.Errorf("activeDeadlineSeconds %v, want 96 (rounded up)", s.ActiveDeadlineSeconds)
	}
	ps := s.Template.Spec
	if ps.RestartPolicy != corev1.RestartPolicyNever || ps.ServiceAccountName != p.Name || len(ps.Containers) != 1 {
		t.Fatalf("pod spec: restart %s, service account %q, %d containers", ps.RestartPolicy, ps.ServiceAccountName, len(ps.Containers))
	}
	c := ps.Containers[0]
	if c.Name != deploykube.LoadShardContainer || c.Image != p.Image || c.ImagePullPolicy != corev1.PullNever ||
		!slices.Equal(c.Command, []string{deploykube.LoadShardBinary, "load-shard"}) || !slices.Equal(c.Args, args) {
		t.Errorf("container: %s %s %s %v %q", c.Name, c.Image, c.ImagePullPolicy, c.Command, c.Args)
	}
	if c.Resources.Limits.Cpu().Value() != 0 || c.Resources.Limits.Memory().String() != "1Gi" {
		t.Errorf("limits %v: want memory 1Gi and no CPU limit", c.Resources.Limits)
	}
	if job.Labels[deploykube.LoadShardLabel] != p.Name || s.Template.Labels[deploykube.LoadShardLabel] != p.Name {
		t.Errorf("labels %v / %v", job.Labels, s.Template.Labels)
	}
	// least privilege: get on the one ConfigMap, nothing else
	wantRule := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{p.Name}, Verbs: []string{"get"}}
	if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].Verbs, wantRule.Verbs) || !slices.Equal(role.Rules[0].Resources, wantRule.Resources) ||
		!slices.Equal(role.Rules[0].ResourceNames, wantRule.ResourceNames) || !slices.Equal(role.Rules[0].APIGroups, wantRule.APIGroups) {
		t.Errorf("role rules %+v, want exactly %+v", role.Rules, wantRule)
	}
	if rb.RoleRef.Name != p.Name || len(rb.Subjects) != 1 || rb.Subjects[0].Name != p.Name || rb.Subjects[0].Namespace != p.Namespace {
		t.Errorf("role binding %+v", rb)
	}
	if _, ok := cm.Data[deploykube.LoadShardStopKey]; !ok || cm.Namespace != p.Namespace {
		t.Errorf("configmap %+v", cm)
	}
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name)
	}
	if !slices.Contains(env, deploykube.LoadShardStopEnv) {
		t.Errorf("env %v: no %s", env, deploykube.LoadShardStopEnv)
	}
}

func TestLoadShardJobBadParams(t *testing.T) {
	good := deploykube.LoadShardParams{Name: "l", Namespace: "n", Image: "r/x:1", Shards: 3, Deadline: time.Minute}
	for _, tc := range []struct {
		name   string
		change func(*deploykube.LoadShardParams)
		want   string
	}{
		{"name", func(p *deploykube.LoadShardParams) { p.Name = "Load_1" }, "name"},
		{"long name", func(p *deploykube.LoadShardParams) { p.Name = strings.Repeat("a", 53) }, "name"},
		{"latest", func(p *deploykube.LoadShardParams) { p.Image = "r/x:latest" }, "image"},
		{"no shards", func(p *deploykube.LoadShardParams) { p.Shards = 0 }, "shards"},
		{"no deadline", func(p *deploykube.LoadShardParams) { p.Deadline = 0 }, "deadline"},
		{"quantity", func(p *deploykube.LoadShardParams) { p.MemoryLimit = "lots" }, "memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := good
			tc.change(&p)
			if _, err := deploykube.LoadShardJob(p); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error about %s", err, tc.want)
			}
		})
	}
	if _, err := deploykube.LoadShardJob(good); err != nil {
		t.Errorf("good params: %v", err)
	}
}
