package main

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/scenarios"
	"github.com/scaleproof/scaleproof/scenarios/consoleclient"
	"github.com/scaleproof/scaleproof/scenarios/platform"
	"github.com/scaleproof/scaleproof/scenarios/platform/local"
	"github.com/scaleproof/scaleproof/scenarios/run"
)

type upOpts struct {
	platform  string
	profile   string
	artifacts string
	refBin    string
	group     string
	scheduler bool
	policyOpts
}

func newUpCmd() *cobra.Command {
	o := &upOpts{}
	c := &cobra.Command{
		Use:   "up",
		Short: "Bring up the reference system on 127.0.0.1 and keep it running until Ctrl-C",
		Long: `up starts the reference system exactly as run does (console, edge, workers as
child processes on 127.0.0.1, and Prometheus when --prometheus allows), turns
on the console's auto-rebalance scheduler at the profile's interval, prints
the URLs and the API keys, and keeps everything running until Ctrl-C (or
SIGTERM), when it tears it all down. Nothing is judged; use it to look at the
console and the edge by hand, or to point another tool at them.

The workers are supervised by the harness (it plays the part Kubernetes plays
on a cluster), which is why scaleproof-ref console cannot simply be started on
its own: its --fleet is the harness's fleet server.

Files go to the artifacts folder ($ARTIFACTS when set, else
./_artifacts/<run-id>): local/console.db, local/prometheus/, scaleproof.log,
and logs/ (every process's log, complete after the teardown). The API keys
are never written there (the artifacts folder is made to be shared): they
are in a private temporary folder (mode 0700; the keys file 0600) whose path
up prints, removed at the teardown.

Exit codes: 0 stopped by Ctrl-C or SIGTERM after a clean teardown, 2 bad
usage, 3 the platform could not be brought up or torn down.`,
		Example: `  scaleproof up
  scaleproof up --profile published --prometheus off`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runUp(cmd, o) },
	}
	f := c.Flags()
	f.StringVar(&o.platform, "platform", "local", "where the system runs: local (child processes on 127.0.0.1; the only one up supports)")
	f.StringVar(&o.profile, "profile", "quick", "settings: quick, published or selftest (cooldowns, scheduler interval, worker limit)")
	f.StringVar(&o.artifacts, "artifacts", "", "artifacts folder (default $ARTIFACTS, else ./_artifacts/<run-id>)")
	f.StringVar(&o.refBin, "ref-bin", "", "path to scaleproof-ref (default: beside this binary, then $PATH)")
	f.StringVar(&o.group, "group", "scaleproof", "the group the group-admin key administers")
	f.BoolVar(&o.scheduler, "scheduler", true, "turn on the console's auto-rebalance scheduler at the profile's interval")
	f.StringVar(&o.prometheus, "prometheus", local.PrometheusAuto,
		"auto (start Debian's prometheus when it is on PATH), off, or the URL of a running Prometheus")
	return c
}

func runUp(cmd *cobra.Command, o *upOpts) error {
	if o.platform != "local" {
		return withCode(exitUsage, fmt.Errorf("up --platform %q: only local is supported (an external system is already up)", o.platform))
	}
	prof, err := scenarios.ProfileByName(o.profile)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if err := local.ValidatePrometheusMode(o.prometheus); err != nil {
		return withCode(exitUsage, err)
	}
	bin, err := findRefBin(o.refBin)
	if err != nil {
		return withCode(exitUsage, err)
	}
	dir := run.ArtifactsDir(o.artifacts, newRunID())
	log, closeLog, err := run.OpenArtifacts(dir, "scaleproof.log")
	if err != nil {
		return withCode(exitUsage, err) // the folder given cannot be written
	}
	defer closeLog()
	o.policy = scenarios.PolicyStep
	pf := local.New(localConfig(bin, dir, o.group, prof, o.policyOpts, log.With("part", "platform")))

	// Ctrl-C tears down; a second one exits at once (run.Trap).
	ctx, stop, _ := run.Trap(cmd.Context(), run.TeardownBudget(pf), "")
	defer stop()
	stderr := cmd.ErrOrStderr()
	fmt.Fprintf(stderr, "scaleproof %s: bringing up the reference system (profile %s); files in %s\n", version, prof.Name, dir)
	ep, upErr := pf.Up(ctx)
	if upErr == nil && o.scheduler {
		cc := consoleclient.New(ep.ConsoleURL, 10*time.Second)
		st, err := cc.SetAutorebalance(ctx, ep.Keys.SuperAdmin.Key,
			consoleclient.Autorebalance{Enabled: true, IntervalSeconds: prof.SchedulerInterval.Seconds()})
		if err != nil || st != http.StatusOK {
			upErr = fmt.Errorf("turning on auto-rebalance every %s: HTTP %d %v", prof.SchedulerInterval, st, err)
		}
	}
	if upErr == nil {
		printUp(cmd.OutOrStdout(), ep, pf.KeysFile(), filepath.Join(dir, "logs"), prof, o.scheduler)
		<-ctx.Done()
	}

	downErr := run.Teardown(pf, filepath.Join(dir, "logs"), log, nil)
	switch {
	case upErr != nil:
		log.Error("platform up failed", "err", upErr)
		return withCode(exitInfra, fmt.Errorf("platform up: %w", upErr))
	case downErr != nil:
		return withCode(exitInfra, fmt.Errorf("teardown: %w", downErr))
	}
	fmt.Fprintln(stderr, "scaleproof: stopped; logs in", filepath.Join(dir, "logs"))
	return nil
}

// printUp prints where the running system is and how to talk to it.
func printUp(w io.Writer, ep platform.Endpoints, keysFile, logs string, prof scenarios.Profile, scheduler bool) {
	prom := ep.PrometheusURL
	if prom == "" {
		prom = "none (--prometheus off, or no prometheus on PATH)"
	}
	sched := "off (--scheduler=false)"
	if scheduler {
		sched = "every " + prof.SchedulerInterval.String()
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "The reference system is up; Ctrl-C stops it.\n\n")
	fmt.Fprintf(tw, "console\t%s\t/api/v1/..., /readyz, pages at /ui/\n", ep.ConsoleURL)
	fmt.Fprintf(tw, "edge\t%s\tMCP: %s/g/%s/z/{zone}/mcp\n", ep.EdgeURL, ep.EdgeURL, ep.Group)
	fmt.Fprintf(tw, "prometheus\t%s\t\n", prom)
	fmt.Fprintf(tw, "auto-rebalance\t%s\tcooldowns up %s, down %s\n", sched, prof.UpCooldown, prof.DownCooldown)
	fmt.Fprintf(tw, "keys file\t%s\t(mode 0600)\n", keysFile)
	fmt.Fprintf(tw, "logs\t%s\t(complete after Ctrl-C)\n\n", logs)
	_ = tw.Flush()
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "role\tname\tkey\n")
	for _, k := range []platform.Key{ep.Keys.SuperAdmin, ep.Keys.GroupAdmin, ep.Keys.Viewer, ep.Keys.MCPUser} {
		role := k.Role
		if len(k.Groups) > 0 {
			role += " of " + k.Groups[0]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", role, k.Name, k.Key)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, `
Try (a zone "a" with up to 3 workers, then one MCP call through the edge):
  curl -sS -X PUT -H 'Authorization: Bearer %s' -d '{"max_count":3}' %s/api/v1/groups/%s/zones/a/workers
  curl -sS -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","arguments":{"ms":200}}}' %s/g/%s/z/a/mcp
`, ep.Keys.GroupAdmin.Key, ep.ConsoleURL, ep.Group, ep.EdgeURL, ep.Group)
}
