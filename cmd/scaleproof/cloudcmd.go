package main

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/cloud"
	"github.com/scaleproof/scaleproof/cloud/janitor"
)

func newCloudCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "cloud",
		Short: "The cloud platforms: what a run would create (plan), and deleting expired scaleproof resources (janitor)",
	}
	c.AddCommand(newCloudPlanCmd(), newCloudJanitorCmd())
	return c
}

type cloudCmdOpts struct {
	platform string
	cloud    cloudOpts
	dryRun   bool
}

func newCloudPlanCmd() *cobra.Command {
	o := &cloudCmdOpts{}
	c := &cobra.Command{
		Use:   "plan",
		Short: "Print every resource `run --platform <cloud>` would create and every API call it makes, changing nothing",
		Long: `plan prints what ` + "`scaleproof run --platform <cloud>`" + ` with the same flags would create
(the cluster and its node pool, the image repository), with the labels each
carries (the run id and, with --ttl, the expiry), and every API call the
platform can make, by service. Nothing is contacted and no credentials are
needed: it is what to show whoever grants the permissions.

Exit codes: 0 printed, 2 bad usage (an unknown cloud, a flag it needs missing).`,
		Example: `  scaleproof cloud plan --platform gke --project my-project --location us-central1 --ttl 3h
  scaleproof cloud plan --platform gke --project my-project --location us-central1-a --cluster existing`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCloudPlan(cmd, o) },
	}
	f := c.Flags()
	f.StringVar(&o.platform, "platform", "", "the cloud: "+strings.Join(cloudNames(), ", "))
	addCloudFlags(f, &o.cloud, true)
	return c
}

func runCloudPlan(cmd *cobra.Command, o *cloudCmdOpts) error {
	runID := newRunID()
	opts := o.cloud.options(runID, nil, nil)
	p, err := newProvider(o.platform, opts)
	if err != nil {
		return withCode(exitUsage, err)
	}
	pl := p.Plan(opts)
	out := cmd.OutOrStdout()
	labels := map[string]string{cloud.LabelManagedBy: cloud.ManagedByValue, cloud.LabelRunID: cloud.RunIDLabelValue(runID),
		cloud.LabelExpiresAt: "<start + --ttl, Unix seconds>"}
	if o.cloud.ttl > 0 {
		labels = cloud.Labels(runID, time.Now(), o.cloud.ttl)
	}
	fmt.Fprintf(out, "scaleproof cloud plan: %s, run id %s (a real run gets its own)\n", p.Name(), runID)
	if o.cloud.ttl <= 0 {
		fmt.Fprintln(out, "note: run needs --ttl; without it Up refuses to start")
	}
	if o.cloud.cluster != "" {
		fmt.Fprintf(out, "adopts cluster %s (never deleted by the run)\n", o.cloud.cluster)
	}
	fmt.Fprintln(out, "\nwould create (deleted by the run's teardown in reverse order, or by `scaleproof cloud janitor` after the expiry):")
	tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	for _, r := range pl.Resources {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", r.Kind, r.Name, r.ID)
		for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
			fmt.Fprintf(tw, "  \t\t%s: %s\n", k, r.Labels[k])
		}
	}
	_ = tw.Flush()
	fmt.Fprintln(out, "  each labelled:")
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		fmt.Fprintf(out, "    %s=%s\n", k, labels[k])
	}
	fmt.Fprintln(out, "\nAPI calls:")
	tw = tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	for _, c := range pl.Calls {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Service, c.Method, c.What)
	}
	_ = tw.Flush()
	fmt.Fprintln(out, "\nthen the system is deployed with the cloud overlay and the scenarios run as `--platform kubeconfig` does (Kubernetes API through the cluster's endpoint and port-forwards).")
	return nil
}

func newCloudJanitorCmd() *cobra.Command {
	o := &cloudCmdOpts{}
	c := &cobra.Command{
		Use:   "janitor",
		Short: "Delete every scaleproof resource of a cloud past its expiry (--dry-run lists them)",
		Long: `janitor lists the clusters, node pools and image repositories of the cloud
(gke: in --project at --location and its region) and deletes every one that
carries scaleproof-managed-by=scaleproof and whose scaleproof-expires-at has
passed: clusters first (their node pools with them), then repositories. A
resource without the managed-by label is never touched; one of ours without
a readable expiry is reported and left. Run it after every nightly run, and
on a schedule: a run killed in the middle of its create leaves nothing it
cannot find.

Exit codes: 0 done (or listed), 2 bad usage, 3 a list or delete failed (a
cloud's permission refusal names the permission).`,
		Example: `  scaleproof cloud janitor --platform gke --project my-project --location us-central1 --dry-run
  scaleproof cloud janitor --platform gke --project my-project --location us-central1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCloudJanitor(cmd, o) },
	}
	f := c.Flags()
	f.StringVar(&o.platform, "platform", "", "the cloud: "+strings.Join(cloudNames(), ", "))
	f.BoolVar(&o.dryRun, "dry-run", false, "list what would be deleted; delete nothing")
	addCloudFlags(f, &o.cloud, false)
	return c
}

func runCloudJanitor(cmd *cobra.Command, o *cloudCmdOpts) error {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts := o.cloud.options("janitor", log, cmd.ErrOrStderr())
	p, err := newProvider(o.platform, opts)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if c, ok := p.(io.Closer); ok {
		defer c.Close()
	}
	if _, err := janitor.Run(cmd.Context(), janitor.Config{Provider: p, DryRun: o.dryRun, Out: cmd.OutOrStdout()}); err != nil {
		return cloudCode(err)
	}
	return nil
}
