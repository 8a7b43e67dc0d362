package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/platform/local"
)

// policyOpts are run's policy flags: the policy every zone is created
// with, and the Prometheus that answers hpa zones' queries and gives the
// harness their signal.
type policyOpts struct {
	policy     string
	prometheus string
	// deployPrometheus is set by resolve on kind when the run needs
	// Prometheus: the platform deploys one beside the reference system.
	deployPrometheus bool
}

func addPolicyFlags(f *pflag.FlagSet, o *policyOpts) {
	f.StringVar(&o.policy, "policy", scenarios.PolicyStep,
		"the policy every scenario's zone is created with: step (Ramen 0.7.5's step policy) or hpa (upstream HPA with a KEDA Prometheus trigger on a PromQL query; runs the spike scenario too and needs Prometheus)")
	f.StringVar(&o.prometheus, "prometheus", local.PrometheusAuto,
		"local: auto (start Debian's prometheus when it is on PATH), off, or the URL of a running Prometheus; external: the URL of the Prometheus that scrapes the system (hpa, spike); kind deploys its own beside the system")
}

// resolve checks the flags and returns the scenario list: with --policy hpa
// and no --scenarios, the five and spike. hpa or spike without a Prometheus
// fails here, before anything starts: on local without the prometheus
// binary (or --prometheus off), on external without --prometheus URL, and
// on kubeconfig and the clouds, which deploy the reference system without
// one. On kind it sets deployPrometheus: kind builds Prometheus's image and
// deploys it beside the system.
func (o *policyOpts) resolve(platformName string, names []string, list []scenarios.Scenario) ([]scenarios.Scenario, error) {
	if o.policy != scenarios.PolicyStep && o.policy != scenarios.PolicyHPA {
		return nil, fmt.Errorf("--policy %q: want step or hpa", o.policy)
	}
	if err := local.ValidatePrometheusMode(o.prometheus); err != nil {
		return nil, err
	}
	if o.policy == scenarios.PolicyHPA && len(names) == 0 {
		list = append(list, scenarios.Spike())
	}
	for _, hpaOnly := range []struct{ name, what string }{
		{"near-threshold", "the hpa policy's tolerance"},
		{"scale-up-limit", "the hpa policy's scale-up rate policies"},
	} {
		if o.policy != scenarios.PolicyHPA && slices.ContainsFunc(list, func(s scenarios.Scenario) bool { return s.Name == hpaOnly.name }) {
			return nil, fmt.Errorf("the %s scenario judges %s: run it with --policy hpa", hpaOnly.name, hpaOnly.what)
		}
	}
	needs := o.policy == scenarios.PolicyHPA || slices.ContainsFunc(list, func(s scenarios.Scenario) bool { return s.Name == "spike" })
	if !needs {
		return list, nil
	}
	what := "--policy hpa"
	if o.policy != scenarios.PolicyHPA {
		what = "the spike scenario"
	}
	switch platformName {
	case "local":
		if ok, why := local.PrometheusAvailable(o.prometheus, ""); !ok {
			return nil, fmt.Errorf("%s needs Prometheus (the hpa metric source and the signal), and there is none: %s. "+
				"Install it (make deps-prometheus), or pass --prometheus URL", what, why)
		}
	case "external":
		if o.prometheus == local.PrometheusAuto || o.prometheus == local.PrometheusOff || o.prometheus == "" {
			return nil, errors.New(what + " on an external platform needs --prometheus URL: the Prometheus that scrapes its edge")
		}
	case "kind":
		o.deployPrometheus = true
	default:
		// kubeconfig and the clouds deploy the reference system without a
		// Prometheus (its image is built here and loaded into kind's node
		// only): the console would have no metric source, hold every hpa
		// zone at 1 and fail the scenarios as if the policy never scaled.
		// (An unknown platform is newRunPlatform's error.)
		if platformName != "kubeconfig" && !slices.Contains(cloudNames(), platformName) {
			return list, nil
		}
		return nil, fmt.Errorf("%s needs Prometheus (the hpa metric source and the signal), and platform %s deploys none with the reference system: "+
			"run it on --platform local or kind, or on --platform external with --prometheus URL (a Prometheus that scrapes that system's edge)", what, platformName)
	}
	return list, nil
}

// localPrometheus is the local platform's Prometheus for profile p
// (quick: scrape and evaluate every 1 s; published: 5 s and 15 s).
func (o *policyOpts) localPrometheus(p scenarios.Profile) local.PrometheusConfig {
	h := scenarios.HPAFor(p)
	return local.PrometheusConfig{Mode: o.prometheus, ScrapeInterval: h.ScrapeInterval, EvalInterval: h.EvalInterval}
}

// endpoints adds the --prometheus URL to an external platform's endpoints.
func (o *policyOpts) endpoints(ep platform.Endpoints) platform.Endpoints {
	if ep.PrometheusURL == "" && local.ValidatePrometheusMode(o.prometheus) == nil &&
		o.prometheus != local.PrometheusAuto && o.prometheus != local.PrometheusOff {
		ep.PrometheusURL = o.prometheus
	}
	return ep
}

// settings adds the policy's settings to the profile's, for the results file.
// prometheus is the --prometheus value on local, where auto and off mean
// something; elsewhere it is the URL given, or "none".
func (o *policyOpts) settings(platformName string, p scenarios.Profile) map[string]string {
	s := p.Settings()
	s["policy"] = o.policy
	s["prometheus"] = o.prometheus
	if platformName != "local" && (o.prometheus == local.PrometheusAuto || o.prometheus == local.PrometheusOff || o.prometheus == "") {
		s["prometheus"] = "none"
		if o.deployPrometheus {
			s["prometheus"] = "in-cluster"
		}
	}
	if o.policy == scenarios.PolicyHPA {
		h := scenarios.HPAFor(p)
		s["hpa_query"] = h.Query
		s["hpa_threshold"] = strconv.FormatFloat(h.Threshold, 'g', -1, 64)
		s["hpa_polling_interval"] = h.PollingInterval.String()
		s["hpa_scale_down_stabilization"] = h.StabilizationDown.String()
		s["hpa_read_empty_as_zero"] = strconv.FormatBool(h.ReadEmptyAsZero)
	}
	return s
}
