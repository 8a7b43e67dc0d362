package kube

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"text/template"
	"time"
)

//go:embed loadshard/job.yaml
var loadShardYAML string

var loadShardTmpl = template.Must(template.New("job.yaml").Funcs(template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
}).Parse(loadShardYAML))

// Names of a distributed load's objects.
const (
	LoadShardComponent = "load-shard"                // app.kubernetes.io/component of the shards' objects
	LoadShardLabel     = "scaleproof.io/load"        // the load's name, on every object and pod of it
	LoadShardContainer = "shard"                     // the shard's container
	LoadShardBinary    = "/scaleproof"               // the scaleproof binary in the image (autoscaler/deploy/image)
	LoadShardStopKey   = "stop"                      // the ConfigMap key the harness sets to end the load early
	LoadShardStopEnv   = "SCALEPROOF_STOP_CONFIGMAP" // the env var naming the ConfigMap in the pod
)

// LoadShardParams choose what LoadShardJob renders.
type LoadShardParams struct {
	// Name names every object of the load (ConfigMap, ServiceAccount,
	// Role, RoleBinding, Job): a DNS label of at most 52 characters (the
	// Job controller appends the index and a suffix to pod names).
	Name      string
	Namespace string
	// Image is the exact image that holds LoadShardBinary.
	Image string
	// Shards is the Job's completions and parallelism (1..1000).
	Shards int
	// Args are `scaleproof load-shard`'s arguments, the same for every
	// shard (each reads its index from JOB_COMPLETION_INDEX).
	Args []string
	// Deadline is the Job's activeDeadlineSeconds (whole seconds, > 0):
	// past it the cluster ends every pod still running.
	Deadline time.Duration
	// Grace is the pods' terminationGracePeriodSeconds (default 30 s).
	Grace time.Duration
	// CPURequest and MemoryLimit are the shard container's (defaults 100m
	// and 1Gi). There is no CPU limit on purpose: throttling a load
	// generator shows up as latency of the target.
	CPURequest, MemoryLimit string
}

var (
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	quantity = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$`)
)

// LoadShardJob renders a distributed load's objects as one multi-document
// YAML stream, in the order they are to be created: the stop ConfigMap,
// the ServiceAccount, the Role (get on that one ConfigMap, nothing else)
// and its RoleBinding, and the Indexed Job (completions = parallelism =
// Shards, backoffLimitPerIndex 0: a failed shard is reported, not run
// again, and the others go on). Bad parameters are an error naming each.
func LoadShardJob(p LoadShardParams) ([]byte, error) {
	if p.CPURequest == "" {
		p.CPURequest = "100m"
	}
	if p.MemoryLimit == "" {
		p.MemoryLimit = "1Gi"
	}
	if p.Grace == 0 {
		p.Grace = 30 * time.Second
	}
	var errs []string
	if len(p.Name) > 52 || !dnsLabel.MatchString(p.Name) {
		errs = append(errs, fmt.Sprintf("name %q: want a DNS label of at most 52 characters", p.Name))
	}
	if len(p.Namespace) > 63 || !dnsLabel.MatchString(p.Namespace) {
		errs = append(errs, fmt.Sprintf("namespace %q: want a DNS label", p.Namespace))
	}
	if p.Image == "" || strings.HasSuffix(p.Image, ":latest") || !strings.Contains(p.Image, ":") {
		errs = append(errs, fmt.Sprintf("image %q: want an exact REPOSITORY:TAG, never :latest", p.Image))
	}
	if p.Shards < 1 || p.Shards > 1000 {
		errs = append(errs, fmt.Sprintf("shards %d: want 1..1000", p.Shards))
	}
	if p.Deadline < time.Second {
		errs = append(errs, fmt.Sprintf("deadline %s: want at least 1 s", p.Deadline))
	}
	if p.Grace < 0 {
		errs = append(errs, fmt.Sprintf("grace %s: want >= 0", p.Grace))
	}
	for n, q := range map[string]string{"cpu request": p.CPURequest, "memory limit": p.MemoryLimit} {
		if !quantity.MatchString(q) {
			errs = append(errs, fmt.Sprintf("%s %q: want a quantity like 100m or 1Gi", n, q))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("load shard job: %s", strings.Join(errs, "; "))
	}
	if p.Args == nil {
		p.Args = []string{}
	}
	labels, _ := json.Marshal(map[string]string{
		"app.kubernetes.io/name": "scaleproof", "app.kubernetes.io/component": LoadShardComponent, LoadShardLabel: p.Name,
	})
	var b strings.Builder
	err := loadShardTmpl.Execute(&b, struct {
		LoadShardParams
		Labels                        string
		DeadlineSeconds, GraceSeconds int64
	}{p, string(labels), int64((p.Deadline + time.Second - 1) / time.Second), int64(p.Grace / time.Second)})
	if err != nil {
		return nil, fmt.Errorf("load shard job: %w", err)
	}
	return []byte(b.String()), nil
}
