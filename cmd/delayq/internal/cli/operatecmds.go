package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/delayq/delayq/cmd/delayq/internal/apiclient"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

func newTopicsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "topics", Short: "List every topic with its job counts", Args: cobra.NoArgs}
	return listCmd(cmd, (*apiclient.Client).Topics, func(topics []apiv1.TopicStats) apiv1.TopicList {
		return apiv1.TopicList{Topics: topics}
	}, "no topics", printTopics)
}

func newStatsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "stats <topic>", Short: "Show a topic's job counts, next due time and oldest wait", Args: cobra.ExactArgs(1)}
	return showCmd(cmd, func(ctx context.Context, c *apiclient.Client, args []string) (*apiv1.TopicStats, error) {
		return c.Stats(ctx, args[0])
	}, printStats)
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
			page.Jobs = []*apiv1.Job{}
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

// readIDs reads job ids, one per line, from path ("-": in); blank lines are skipped and
// surrounding white space trimmed (an id has none).
func readIDs(in io.Reader, path string) ([]string, error) {
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("--ids-from: %w", err)
		}
		defer f.Close()
		in = f
	}
	var ids []string
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		if id := strings.TrimSpace(sc.Text()); id != "" {
			ids = append(ids, id)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--ids-from: %w", err)
	}
	return ids, nil
}

// newDeadActionCmd builds `dead requeue` or `dead delete`.
func newDeadActionCmd(action string) *cobra.Command {
	var ids, commaIDs []string
	var idsFrom string
	var all bool
	short := map[string]string{
		"requeue": "Make dead jobs ready again, with their attempts reset",
		"delete":  "Delete dead jobs for good",
	}[action]
	cmd := &cobra.Command{
		Use:   action + " <topic> (--id ID ... | --ids-from FILE | --all)",
		Short: short,
		Example: fmt.Sprintf("  delayq dead %s orders --id order-1 --id order-2\n"+
			"  delayq dead list orders --json | jq -r .id | delayq dead %s orders --ids-from -\n"+
			"  delayq dead %s orders --all", action, action, action),
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().StringArrayVar(&ids, "id", nil, "id of a dead job; repeat it for several (ids may contain commas)")
	cmd.Flags().StringVar(&idsFrom, "ids-from", "", "read ids from this file, one per line (- for standard input)")
	cmd.Flags().StringSliceVar(&commaIDs, "ids", nil, "ids of the dead jobs, comma-separated")
	_ = cmd.Flags().MarkDeprecated("ids", "ids may contain commas: use --id for each id, or --ids-from")
	cmd.Flags().BoolVar(&all, "all", false, "every dead job of the topic")
	cmd.MarkFlagsMutuallyExclusive("id", "all")
	cmd.MarkFlagsMutuallyExclusive("ids-from", "all")
	cmd.MarkFlagsMutuallyExclusive("ids", "all")
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, args []string) error {
		topic := args[0]
		ids = append(ids, commaIDs...)
		if idsFrom != "" {
			more, err := readIDs(cmd.InOrStdin(), idsFrom)
			if err != nil {
				return err
			}
			ids = append(ids, more...)
		}
		if !all && len(ids) == 0 {
			return errors.New("give the dead jobs: --id (repeatable), --ids-from, or --all")
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
			fmt.Fprintf(w, "%s %s of %s\n", past, plural(n, "dead job"), topic)
		})
	})
}
