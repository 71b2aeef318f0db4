package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/delayq/delayq/cmd/delayq/internal/apiclient"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

func newTopicCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Pause, resume, limit, set the defaults of or delete a topic",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(
		newTopicControlCmd("pause", "Pause a topic: no consumer gets its jobs until it is resumed (a topic that does not exist is created)",
			(*apiclient.Client).PauseTopic),
		newTopicControlCmd("resume", "Resume a paused topic: waiting consumers get its due jobs at once",
			(*apiclient.Client).ResumeTopic),
		newTopicLimitsCmd(),
		newTopicDefaultsCmd(),
		newTopicDeleteCmd(),
	)
	return cmd
}

// newTopicControlCmd builds `topic pause` or `topic resume`, which print the topic as it is
// after the change.
func newTopicControlCmd(name, short string, op func(*apiclient.Client, context.Context, string) (*apiv1.TopicStats, error)) *cobra.Command {
	cmd := &cobra.Command{Use: name + " <topic>", Short: short, Args: cobra.ExactArgs(1)}
	return showCmd(cmd, func(ctx context.Context, c *apiclient.Client, args []string) (*apiv1.TopicStats, error) {
		return op(c, ctx, args[0])
	}, printStats)
}

func newTopicLimitsCmd() *cobra.Command {
	var rate, concurrency int64
	var period time.Duration
	var clear bool
	cmd := &cobra.Command{
		Use:   "limits <topic> (--rate N --period D | --concurrency N | --clear)",
		Short: "Replace a topic's rate and concurrency limits, or lift them",
		Long: `Replace a topic's limits: at most --rate deliveries start within any span of --period (a
sliding window), and at most --concurrency of its jobs are reserved at once, over every
consumer. A limit not given is lifted; --clear lifts them all. Each of the topic's partitions
enforces its share of a limit, so a limit below the partition count is refused.`,
		Example: "  delayq topic limits sms --rate 100 --period 1s\n" +
			"  delayq topic limits reports --concurrency 4\n" +
			"  delayq topic limits sms --clear",
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().Int64Var(&rate, "rate", 0, "deliveries that may start within any --period")
	cmd.Flags().DurationVar(&period, "period", 0, "the rate limit's window, such as 1s or 1m")
	cmd.Flags().Int64Var(&concurrency, "concurrency", 0, "jobs that may be reserved at once")
	cmd.Flags().BoolVar(&clear, "clear", false, "lift every limit")
	for _, f := range []string{"rate", "period", "concurrency"} {
		cmd.MarkFlagsMutuallyExclusive(f, "clear")
	}
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, args []string) error {
		if !clear && rate == 0 && period == 0 && concurrency == 0 {
			return errors.New("give --rate and --period, --concurrency, or --clear")
		}
		if period%time.Millisecond != 0 {
			return fmt.Errorf("--period %v: want a whole number of milliseconds", period)
		}
		ctx, cancel := out.bound(ctx, 0)
		defer cancel()
		var s *apiv1.TopicStats
		var err error
		if clear {
			s, err = c.ClearTopicLimits(ctx, args[0])
		} else {
			s, err = c.SetTopicLimits(ctx, args[0], apiv1.TopicLimits{Rate: rate, PeriodMs: period.Milliseconds(), Concurrency: concurrency})
		}
		if err != nil {
			return err
		}
		return out.result(s, func(w io.Writer) { printStats(w, s) })
	})
}

func newTopicDefaultsCmd() *cobra.Command {
	var uniqueFor time.Duration
	var clear bool
	cmd := &cobra.Command{
		Use:   "defaults <topic> (--unique-for D | --clear)",
		Short: "Replace the defaults a topic's jobs take, or leave them to the server",
		Long: `Replace a topic's defaults for the jobs enqueued from then on: --unique-for is how long the id
of a job with an id that gives no unique_for of its own stays taken once the job ends (0: not
at all, whatever the server's --unique-for). A default not given is left to the server, and
--clear leaves them all to it.`,
		Example: "  delayq topic defaults orders --unique-for 24h\n" +
			"  delayq topic defaults orders --unique-for 0\n" +
			"  delayq topic defaults orders --clear",
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().DurationVar(&uniqueFor, "unique-for", 0, "how long the ids of ended jobs stay taken, such as 24h; 0 for not at all")
	cmd.Flags().BoolVar(&clear, "clear", false, "leave every default to the server")
	cmd.MarkFlagsMutuallyExclusive("unique-for", "clear")
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, args []string) error {
		var d apiv1.TopicDefaults
		switch {
		case cmd.Flags().Changed("unique-for"):
			if err := wholeMs("--unique-for", uniqueFor); err != nil {
				return err
			}
			d.UniqueForMs = new(uniqueFor.Milliseconds())
		case !clear:
			return errors.New("give --unique-for, or --clear")
		}
		ctx, cancel := out.bound(ctx, 0)
		defer cancel()
		s, err := c.SetTopicDefaults(ctx, args[0], d)
		if err != nil {
			return err
		}
		return out.result(s, func(w io.Writer) { printStats(w, s) })
	})
}

func newTopicDeleteCmd() *cobra.Command {
	var purge bool
	cmd := &cobra.Command{
		Use:   "delete <topic> [--purge]",
		Short: "Delete an empty topic, or with --purge a topic and every job of it",
		Args:  cobra.ExactArgs(1),
	}
	cmd.Flags().BoolVar(&purge, "purge", false, "delete the topic's jobs too, in every state")
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, args []string) error {
		ctx, cancel := out.bound(ctx, 0)
		defer cancel()
		n, err := c.DeleteTopic(ctx, args[0], purge)
		var ae *apiclient.Error
		if !purge && errors.As(err, &ae) && ae.Code == "failed_precondition" {
			// The server's message names the HTTP way to purge; here it is a flag.
			msg := strings.TrimSuffix(ae.Message, " (?purge=true)") + " (--purge deletes them with the topic)"
			return &apiclient.Error{Status: ae.Status, Code: ae.Code, Message: msg}
		}
		if err != nil {
			return err
		}
		return out.result(apiv1.DeleteResponse{Deleted: n}, func(w io.Writer) {
			fmt.Fprintf(w, "deleted topic %s and %s\n", args[0], plural(n, "job"))
		})
	})
}
