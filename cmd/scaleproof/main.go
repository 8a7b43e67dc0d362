// Command scaleproof is the harness: it brings up a platform, deploys the
// reference system (or points at one that is not ours), drives the five
// load-test scenarios of Ramen 0.7.5's autoscaling notes, with MCP tools/call load, judges them, and writes results.
//
// Exit codes (stable, for CI):
//
//	0  every scenario passed
//	1  a scenario failed (or a compared run regressed)
//	2  bad usage or unusable input
//	3  the platform could not be brought up (infrastructure), or
//	   recommend-bounds could not query Prometheus
//	130 interrupted (Ctrl-C / SIGTERM); results are still written, marked incomplete
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/scaleproof/scaleproof/internal/buildinfo"
	"github.com/scaleproof/scaleproof/scenarios/run"
)

// Exit codes: a run's (scenarios/run).
const (
	exitOK          = run.ExitOK
	exitFailed      = run.ExitFailed
	exitUsage       = run.ExitUsage
	exitInfra       = run.ExitInfra
	exitInterrupted = run.ExitInterrupted
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// writeJSON writes v to w as indented JSON, as every --json does.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// version is set with -ldflags "-X main.version=..." by the Makefile.
var (
	version = "dev"
	commit  = ""
)

func main() {
	// The API server's warnings (a deprecated field, KEDA's admission
	// webhook on a setting that does nothing) as kubectl prints them, once
	// each, not through klog.
	rest.SetDefaultWarningHandler(rest.NewWarningWriter(os.Stderr, rest.WarningWriterOptions{Deduplicate: true}))
	root := &cobra.Command{
		Use:   "scaleproof",
		Short: "Load-test and conformance harness for worker autoscalers (Ramen-style step policy, upstream HPA/KEDA)",
		Long: `scaleproof proves that an autoscaler scales workers up fast, back down carefully,
never scales in during an outage, honours its bounds and roles, and keeps the
service up while it does.

  scaleproof run                       the five scenarios on local processes (quick profile)
  scaleproof run --profile published   the published load test's settings (scheduler 20 s, cooldowns 30/120 s)
  scaleproof run --platform external --console-url URL --edge-url URL --keys FILE
                                       an autoscaler that is not ours, through the same API
  scaleproof run --platform kind --target hpa
                                       the cluster's own HPA on a worker Deployment (CPU)
  scaleproof run --platform kind --target keda --workload queue
                                       KEDA on the query scheduler's queue (Grafana's post)
  scaleproof selftest                  plant each known bug in the reference system and show which fact catches it
  scaleproof up                        the reference system on 127.0.0.1 until Ctrl-C (URLs, keys)
  scaleproof report RESULTS...         the published table from results files
  scaleproof compare BASE CANDIDATE    a candidate run against a baseline, with tolerances
  scaleproof load --url URL ...        k6-style load against one MCP tool or HTTP URL, with thresholds
  scaleproof sim                       the scenarios in virtual time against a model
  scaleproof run --platform gke --project P --location L --ttl 3h
                                       a cluster made for the run (or --cluster), torn down after
  scaleproof cloud plan|janitor        what a cloud run creates; delete expired scaleproof resources

Exit codes: 0 pass, 1 a scenario failed (or compare found a regression), 2 bad
usage or unusable input, 3 platform error (or Prometheus unreachable), 99 a
load threshold was crossed (as k6), 130 interrupted (up exits 0 on Ctrl-C:
that is how it stops).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.String(version, commit),
	}
	root.AddCommand(newRunCmd(), newSelftestCmd(), newUpCmd(), newReportCmd(), newCompareCmd(), newRecommendCmd(), newKindCmd(), &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(c *cobra.Command, _ []string) {
			fmt.Fprintln(c.OutOrStdout(), "scaleproof", buildinfo.String(version, commit))
		},
	})
	root.AddCommand(newSimCmd(), newLoadCmd(), newLoadShardCmd(), newCloudCmd())
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return withCode(exitUsage, fmt.Errorf("%v\n\n%s", err, c.UsageString()))
	})
	err := root.Execute()
	if err == nil {
		os.Exit(exitOK)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintln(os.Stderr, "scaleproof:", ee.err)
		}
		os.Exit(ee.code)
	}
	fmt.Fprintln(os.Stderr, "scaleproof:", err)
	os.Exit(exitUsage) // cobra's own errors: unknown command, bad args
}
