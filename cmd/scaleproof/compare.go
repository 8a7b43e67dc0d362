package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/reports/render"
	"github.com/scaleproof/scaleproof/scenarios/run"
)

func newCompareCmd() *cobra.Command {
	var tolFile, format, out string
	c := &cobra.Command{
		Use:   "compare BASELINE CANDIDATE",
		Short: "Compare a candidate run with a baseline against tolerances (the release sign-off)",
		Long: `compare reads two results files and, per scenario and metric, prints the
change and a verdict against tolerances, as Markdown to paste into a release.

Default tolerances (override any of them with --tolerances FILE, JSON):
  {"up_to_max_growth_pct": 20,   up to max may grow by 20 %
   "back_to_1_growth_pct": 20,   back to 1 may grow by 20 %
   "time_slack_s": 1,            ...or by 1 s, the sampling resolution
   "max_5xx": 0,                 5xx may not rise above max(baseline, 0)
   "pct_429_increase_pts": 1,    429 % at most baseline + 1 point
   "passed_must_pass": true,     a scenario that passed must still pass
   "p95_growth_pct": null}       p95 reported only (set a number to enforce)

Exit codes: 0 no regression, 1 regressed, 2 unusable input (a file missing,
not a results file, incomplete, or the two ran different profiles).`,
		Example: `  scaleproof compare _artifacts/v1.4/results.jsonl _artifacts/v1.5-rc1/results.jsonl
  scaleproof compare --tolerances release.json --out signoff.md base.jsonl cand.jsonl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return withCode(exitUsage, fmt.Errorf("compare needs BASELINE and CANDIDATE, got %d argument(s)\n\n%s", len(args), cmd.UsageString()))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			write, ok := map[string]func(io.Writer, *render.Comparison) error{
				"markdown": render.WriteComparisonMarkdown, "md": render.WriteComparisonMarkdown, "json": render.WriteComparisonJSON}[format]
			if !ok { // before any file is read: a usage error says only that
				return withCode(exitUsage, fmt.Errorf("unknown --format %q (have: markdown, json)", format))
			}
			tol := render.DefaultTolerances()
			if tolFile != "" {
				t, err := render.ReadTolerances(tolFile)
				if err != nil {
					return withCode(exitUsage, err)
				}
				tol = t
			}
			runs, err := readResults(args)
			if err != nil {
				return withCode(exitUsage, err)
			}
			cmp, err := render.Compare(runs[0], runs[1], tol)
			if err != nil {
				return withCode(exitUsage, err)
			}
			for _, w := range cmp.Warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "scaleproof compare: warning:", w)
			}
			var b bytes.Buffer
			if err := write(&b, cmp); err != nil {
				return withCode(exitUsage, err)
			}
			if out == "" || out == "-" {
				if _, err := cmd.OutOrStdout().Write(b.Bytes()); err != nil {
					return withCode(exitUsage, err)
				}
			} else if err := run.WriteFileAtomic(out, b.Bytes()); err != nil {
				return withCode(exitUsage, err)
			}
			if cmp.Regressed() {
				return withCode(exitFailed, errors.New("")) // the Markdown says what regressed
			}
			return nil
		},
	}
	c.Flags().StringVar(&tolFile, "tolerances", "", "JSON file of tolerances (fields left out keep their defaults)")
	c.Flags().StringVar(&format, "format", "markdown", "markdown or json")
	c.Flags().StringVarP(&out, "out", "o", "", "write to this file instead of stdout")
	return c
}
