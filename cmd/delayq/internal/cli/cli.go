// Package cli is the delayq command line: `delayq server` runs the HTTP API server, and the
// other subcommands call a running server's API. cmd/delayq calls Run; tests call it directly.
package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// env reads environment variables; Run's caller passes os.Getenv.
type env func(name string) string

// Run runs the delayq command line with args (without the program name), reading environment
// variables through getenv and writing to stdout and stderr. Canceling ctx stops a running
// server gracefully; Run then returns nil. Any failure is returned, for the caller to print and
// exit non-zero.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	root := newRoot(env(getenv), stdout, stderr)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

func newRoot(getenv env, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "delayq",
		Short: "delayq is a distributed delay queue on Redis",
		Long: strings.TrimSpace(`
delayq is a distributed delay queue on Redis: a job put in now is handed to a consumer at a
chosen later moment.

Run "delayq server" to start the HTTP API server (with an embedded redis-server unless --redis
is given); the other commands call a running server's API.`),
		SilenceErrors: true, // the caller prints the error once
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return applyEnv(cmd, getenv)
		},
	}
	root.CompletionOptions.HiddenDefaultCmd = true
	root.Version = version()
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())
	})
	root.AddCommand(
		newServerCmd(stderr),
		newEnqueueCmd(),
		newGetCmd(),
		newCancelCmd(),
		newRescheduleCmd(),
		newReserveCmd(),
		newAckCmd(),
		newNackCmd(),
		newTouchCmd(),
		newReleaseCmd(),
		newTopicsCmd(),
		newStatsCmd(),
		newTopicCmd(),
		newDeadCmd(),
		newHistoryCmd(),
		newScheduleCmd(),
		newWebhookSecretCmd(),
		newVersionCmd(),
		newBenchCmd(),
	)
	return root
}
