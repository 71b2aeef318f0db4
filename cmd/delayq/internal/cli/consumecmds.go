package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/delayq/delayq/cmd/delayq/internal/apiclient"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

func newReserveCmd() *cobra.Command {
	var r apiclient.ReserveRequest
	cmd := &cobra.Command{
		Use:   "reserve <topic>",
		Short: "Lease due jobs of a topic (pull consuming)",
		Long: "Lease up to --max due jobs, highest priority first, waiting up to --wait for one to become due.\n" +
			"Each comes with a lease to pass to ack, nack or touch before its deadline.\n" +
			"A topic that does not exist is waited on like an empty one, without being created, and a warning\n" +
			"on standard error says it does not exist.",
		Example: "  delayq reserve orders --max 10 --wait 30s",
		Args:    cobra.ExactArgs(1),
	}
	cmd.Flags().IntVar(&r.Max, "max", 1, "most jobs to lease")
	cmd.Flags().DurationVar(&r.Wait, "wait", 0, "how long to wait for a job to become due (up to 60s)")
	cmd.Flags().DurationVar(&r.TTR, "ttr", 0, "lease length, instead of each job's own")
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, args []string) error {
		ctx, cancel := out.bound(ctx, max(r.Wait, 0))
		defer cancel()
		answer, err := c.ReserveAnswer(ctx, args[0], r)
		if err != nil {
			return err
		}
		if answer.TopicExists != nil && !*answer.TopicExists {
			fmt.Fprintf(out.errw, "warning: topic %q does not exist: nothing was ever enqueued to it, or it was deleted (check the name; delayq topics lists them)\n", args[0])
		}
		if answer.Jobs == nil {
			answer.Jobs = []*apiv1.Job{}
		}
		jobs := answer.Jobs
		return out.result(answer, func(w io.Writer) {
			if len(jobs) == 0 {
				fmt.Fprintln(w, "no job is due")
				return
			}
			printJobs(w, jobs, true)
		})
	})
}

// leaseCmd builds a command that acts on a leased job, with a required --lease flag.
func leaseCmd(cmd *cobra.Command, lease *string, run func(ctx context.Context, c *apiclient.Client, out *output, topic, id string) error) *cobra.Command {
	cmd.Args = cobra.ExactArgs(2)
	cmd.Flags().StringVar(lease, "lease", "", "the lease token that reserve returned")
	_ = cmd.MarkFlagRequired("lease")
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, args []string) error {
		ctx, cancel := out.bound(ctx, 0)
		defer cancel()
		return run(ctx, c, out, args[0], args[1])
	})
}

func newAckCmd() *cobra.Command {
	var lease string
	cmd := &cobra.Command{Use: "ack <topic> <id> --lease <lease>", Short: "Mark a reserved job done; it is removed"}
	return leaseCmd(cmd, &lease, func(ctx context.Context, c *apiclient.Client, out *output, topic, id string) error {
		if err := c.Ack(ctx, topic, id, lease); err != nil {
			return err
		}
		out.done("acked %s/%s", topic, id)
		return nil
	})
}

func newNackCmd() *cobra.Command {
	var lease string
	var n apiclient.NackRequest
	var delay time.Duration
	cmd := &cobra.Command{
		Use:   "nack <topic> <id> --lease <lease>",
		Short: "Report a reserved job's attempt as failed",
		Long: "The job is due again after --delay, or after its backoff step; when its retries are used up,\n" +
			"or with --dead, it goes to the dead letters.",
	}
	cmd.Flags().StringVar(&n.Error, "error", "", "what went wrong, kept as the job's last_error")
	cmd.Flags().DurationVar(&delay, "delay", 0, "retry after this long instead of the backoff step")
	cmd.Flags().BoolVar(&n.Dead, "dead", false, "send the job to the dead letters at once")
	return leaseCmd(cmd, &lease, func(ctx context.Context, c *apiclient.Client, out *output, topic, id string) error {
		if cmd.Flags().Changed("delay") {
			if delay < 0 {
				return fmt.Errorf("--delay %v must not be negative", delay)
			}
			n.Delay = &delay
		}
		if err := c.Nack(ctx, topic, id, lease, n); err != nil {
			return err
		}
		out.done("nacked %s/%s", topic, id)
		return nil
	})
}

func newReleaseCmd() *cobra.Command {
	var lease string
	var delay time.Duration
	cmd := &cobra.Command{
		Use:   "release <topic> <id> --lease <lease> [--delay D]",
		Short: "Give a reserved job back unfinished, without using an attempt",
		Long: "Give a reserved job back unfinished: the attempt does not count. Without --delay the job is\n" +
			"due again at once; with it, the release is a snooze: the job is due again that long\n" +
			"after now and counts a snooze, and past its max_snoozes it goes to the dead letters.",
	}
	cmd.Flags().DurationVar(&delay, "delay", 0, "put the job off this long (a snooze)")
	return leaseCmd(cmd, &lease, func(ctx context.Context, c *apiclient.Client, out *output, topic, id string) error {
		if delay < 0 {
			return fmt.Errorf("--delay %v: want a duration of 0 or more", delay)
		}
		if cmd.Flags().Changed("delay") {
			if err := c.Snooze(ctx, topic, id, lease, delay); err != nil {
				return err
			}
			out.done("snoozed %s/%s for %s", topic, id, delay)
			return nil
		}
		if err := c.Release(ctx, topic, id, lease); err != nil {
			return err
		}
		out.done("released %s/%s", topic, id)
		return nil
	})
}

func newTouchCmd() *cobra.Command {
	var lease string
	var ttr time.Duration
	cmd := &cobra.Command{Use: "touch <topic> <id> --lease <lease>", Short: "Extend a lease"}
	cmd.Flags().DurationVar(&ttr, "ttr", 0, "new lease length from now, instead of the job's TTR")
	return leaseCmd(cmd, &lease, func(ctx context.Context, c *apiclient.Client, out *output, topic, id string) error {
		deadline, err := c.Touch(ctx, topic, id, lease, ttr)
		if err != nil {
			return err
		}
		t := apiv1.Time{Time: deadline}
		return out.result(apiv1.TouchResponse{LeaseDeadline: t}, func(w io.Writer) {
			fmt.Fprintf(w, "lease of %s/%s runs until %s\n", topic, id, t)
		})
	})
}
