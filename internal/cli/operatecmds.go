package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/delayq/delayq/internal/apiclient"
)

func newTopicsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "topics", Short: "List every topic with its job counts", Args: cobra.NoArgs}
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, _ []string) error {
		ctx, cancel := out.bound(ctx, 0)
		defer cancel()
		topics, err := c.Topics(ctx)
		if err != nil {
			return err
		}
		if topics == nil {
			topics = []apiclient.TopicStats{}
		}
		return out.result(map[string]any{"topics": topics}, func(w io.Writer) {
			if len(topics) == 0 {
				fmt.Fprintln(w, "no topics")
				return
			}
			printTopics(w, topics)
		})
	})
}

func newStatsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "stats <topic>", Short: "Show a topic's job counts, next due time and oldest wait", Args: cobra.ExactArgs(1)}
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, args []string) error {
		ctx, cancel := out.bound(ctx, 0)
		defer cancel()
		s, err := c.Stats(ctx, args[0])
		if err != nil {
			return err
		}
		return out.result(s, func(w io.Writer) { printStats(w, s) })
	})
}

func newDeadCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dead",
		Short: "List, requeue or delete dead letters",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newDeadListCmd(), newDeadActionCmd("requeue"), newDeadActionCmd("delete"))
	return cmd
}

func newDeadListCmd() *cobra.Command {
	var limit int
	var cursor string
	cmd := &cobra.Command{Use: "list <topic>", Short: "List a topic's dead jobs, a page at a time", Args: cobra.ExactArgs(1)}
	cmd.Flags().IntVar(&limit, "limit", 100, "jobs per page")
	cmd.Flags().StringVar(&cursor, "cursor", "", "where to start: the next_cursor of the previous page")
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, args []string) error {
		ctx, cancel := out.bound(ctx, 0)
		defer cancel()
		page, err := c.DeadJobs(ctx, args[0], limit, cursor)
		if err != nil {
			return err
		}
		if page.Jobs == nil {
			page.Jobs = []*apiclient.Job{}
		}
		return out.result(page, func(w io.Writer) {
			if len(page.Jobs) == 0 {
				fmt.Fprintln(w, "no dead jobs")
			} else {
				printJobs(w, page.Jobs, false)
			}
			if page.NextCursor != "" {
				fmt.Fprintf(w, "more: delayq dead list %s --cursor %s\n", args[0], page.NextCursor)
			}
		})
	})
}

// newDeadActionCmd builds `dead requeue` or `dead delete`.
func newDeadActionCmd(action string) *cobra.Command {
	var ids []string
	var all bool
	short := map[string]string{
		"requeue": "Make dead jobs ready again, with their attempts reset",
		"delete":  "Delete dead jobs for good",
	}[action]
	cmd := &cobra.Command{
		Use:     action + " <topic> (--ids a,b | --all)",
		Short:   short,
		Example: fmt.Sprintf("  delayq dead %s orders --ids order-1,order-2\n  delayq dead %s orders --all", action, action),
		Args:    cobra.ExactArgs(1),
	}
	cmd.Flags().StringSliceVar(&ids, "ids", nil, "ids of the dead jobs, comma-separated")
	cmd.Flags().BoolVar(&all, "all", false, "every dead job of the topic")
	cmd.MarkFlagsMutuallyExclusive("ids", "all")
	cmd.MarkFlagsOneRequired("ids", "all")
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, args []string) error {
		topic := args[0]
		if !all && len(ids) == 0 {
			return errors.New("--ids: give at least one id")
		}
		ctx, cancel := out.bound(ctx, 0)
		defer cancel()
		var n int
		var err error
		switch {
		case action == "requeue" && all:
			n, err = c.RequeueAllDead(ctx, topic)
		case action == "requeue":
			n, err = c.RequeueDead(ctx, topic, ids)
		case all:
			n, err = c.DeleteAllDead(ctx, topic)
		default:
			n, err = c.DeleteDead(ctx, topic, ids)
		}
		if err != nil {
			return err
		}
		past := strings.TrimSuffix(action, "e") + "ed"
		return out.result(map[string]int{past: n}, func(w io.Writer) {
			fmt.Fprintf(w, "%s %d dead jobs of %s\n", past, n, topic)
		})
	})
}
