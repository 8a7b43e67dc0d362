package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/reports"
)

func newReportCmd() *cobra.Command {
	var format string
	var published, wide bool
	c := &cobra.Command{
		Use:   "report RESULTS...",
		Short: "Render the published table from one or more results files",
		Long: `report reads results files (results.jsonl, written by run) and prints seed 002's
table, one row per file: Platform | Up to 3 | Back to 1 | Calls ok | 429 | 5xx.
A file from a killed run is read up to where it stopped and flagged incomplete.

Exit codes: 0 rendered, 2 a file is missing or not a results file.`,
		Example: `  scaleproof report _artifacts/*/results.jsonl
  scaleproof report --published --format markdown _artifacts/run1/results.jsonl`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var rows []reports.Row
			var all []*reports.Results
			for _, a := range args {
				res, err := reports.Read(a)
				if err != nil {
					return withCode(exitUsage, err)
				}
				r := reports.RowFromResults(res)
				if res.Incomplete {
					r.Platform += " (incomplete)"
				}
				rows = append(rows, r)
				all = append(all, res)
			}
			if published {
				rows = append(rows, reports.Published()...)
			}
			cols := reports.Columns{}
			if wide {
				cols = reports.Columns{Other4xx: true, Transport: true, Pct429: true, P95: true}
			}
			out := cmd.OutOrStdout()
			switch format {
			case "text":
				_ = reports.WriteTable(out, rows, cols)
				for _, res := range all {
					fmt.Fprintf(out, "\n%s (%s, profile %s):\n", res.Path, res.Meta.Platform, res.Meta.Profile)
					reports.WriteVerdicts(out, res.Verdicts)
				}
			case "markdown":
				_ = reports.WriteMarkdown(out, rows, cols)
				if published {
					fmt.Fprintf(out, "\nPublished rows: %s\n", reports.PublishedSource)
				}
			case "json":
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				_ = enc.Encode(rows)
			default:
				return withCode(exitUsage, fmt.Errorf("unknown --format %q (have: text, markdown, json)", format))
			}
			return nil
		},
	}
	c.Flags().StringVar(&format, "format", "text", "text, markdown or json")
	c.Flags().BoolVar(&published, "published", false, "add seed 002's published rows (GKE, EKS, AKS of 2026-10-11)")
	c.Flags().BoolVar(&wide, "wide", false, "extra columns: other 4xx, transport errors, 429 %, p95")
	return c
}
