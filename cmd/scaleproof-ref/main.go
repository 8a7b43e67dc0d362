// Command scaleproof-ref is the reference system scaleproof tests: one binary
// with its servers, so one image serves them all.
//
//	scaleproof-ref console   the console API and the reference autoscaler
//	scaleproof-ref worker    an MCP server with an in-flight limit (429 beyond it)
//	scaleproof-ref edge      routes /g/{group}/z/{zone}/mcp to a ready worker
//	scaleproof-ref scheduler the queue workload's query scheduler (a FIFO of MCP calls)
//	scaleproof-ref querier   pulls calls from a scheduler with a fixed number of workers
//
// Exit codes: 0 clean stop (SIGTERM drained), 1 runtime error, 2 bad flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/scaleproof/scaleproof/internal/buildinfo"
)

// version and commit are set with -ldflags "-X main.version=... -X
// main.commit=..." by the Makefile.
var (
	version = "dev"
	commit  = ""
)

// errUsage marks a flag or argument error (exit code 2).
var errUsage = errors.New("usage")

func main() {
	root := &cobra.Command{
		Use:   "scaleproof-ref",
		Short: "The reference system scaleproof tests: console (autoscaler), worker (MCP), edge, scheduler and querier (the queue workload)",
		Long: `scaleproof-ref runs one server of the reference system per process.

Each server listens on --listen (port 0 allowed) and prints one line on stdout,
"scaleproof-ref listening http://HOST:PORT", then logs JSON to stderr. On SIGTERM
it turns /readyz to 503, finishes in-flight requests up to its drain timeout, and
exits 0.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.String(version, commit),
	}
	root.AddCommand(newWorkerCmd(), newEdgeCmd(), newConsoleCmd(), newSchedulerCmd(), newQuerierCmd(), &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(c *cobra.Command, _ []string) {
			fmt.Fprintln(c.OutOrStdout(), "scaleproof-ref", buildinfo.String(version, commit))
		},
	})
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w: %v\n\n%s", errUsage, err, c.UsageString())
	})
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "scaleproof-ref:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageErrors joins a server's flag errors into one usage error (exit
// code 2), or nil when there are none (nil entries are dropped).
func usageErrors(errs []error) error {
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return nil
}

// wantPositive is the usage error of a duration flag that must be above
// zero ("--drain 0s: want > 0"), or nil when d is.
func wantPositive(flag string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s %s: want > 0", flag, d)
	}
	return nil
}

// wantNonNegative is the usage error of a duration flag that may be zero
// but not below ("--boot-delay -1s: want >= 0"), or nil when d is not.
func wantNonNegative(flag string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%s %s: want >= 0", flag, d)
	}
	return nil
}

// checkedRun is a subcommand's RunE: check resolves the flags in o (its
// error ends the command), then run serves with them.
func checkedRun[F any](o *F, check func(*cobra.Command) error, run func(context.Context, F) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if err := check(cmd); err != nil {
			return err
		}
		return run(cmd.Context(), *o)
	}
}

// noArgs is the Args check of a subcommand that takes none: extra
// arguments are a usage error (exit 2) naming the subcommand.
func noArgs(name string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("%w: %s takes no arguments, got %q", errUsage, name, args)
		}
		return nil
	}
}
