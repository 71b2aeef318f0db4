package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/delayq/delayq/cmd/delayq/internal/apiclient"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// historyErrorWidth is how much of an entry's last error a history line shows.
const historyErrorWidth = 60

// historyFlags are the flags of `delayq history` as given.
type historyFlags struct {
	q            apiclient.HistoryQuery
	since, until string
	all          bool
}

func newHistoryCmd() *cobra.Command {
	var fl historyFlags
	cmd := &cobra.Command{
		Use:   "history [<topic> <id>] [--topic T] [--id ID] [--outcome O] [--since T] [--until T] [--limit N] [--all]",
		Short: "Search the job history a server archives in PostgreSQL, newest first",
		Long: `Search the job history of a server started with --archive: one line per end of a job (acked,
dead, cancelled, dead_deleted) and, when the server keeps them, per failed attempt, newest
first. "delayq history <topic> <id>" shows one job's history, which stays after the job is gone
from Redis. --since and --until take an RFC 3339 time, or a duration that long ago by this
machine's clock (24h); since is inclusive, until exclusive. Without --all one page is shown,
and the cursor of the next one.`,
		Example: "  delayq history --topic orders --outcome dead --since 24h\n" +
			"  delayq history orders o-42\n" +
			"  delayq history --since 2026-11-22T00:00:00Z --until 2026-11-23T00:00:00Z --all --json",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 0 && len(args) != 2 {
				return fmt.Errorf("give a topic and a job id, or neither (got %d arguments)", len(args))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.q.Topic, "topic", "", "only this topic's entries")
	f.StringVar(&fl.q.ID, "id", "", "only the entries of the job with this id (needs --topic)")
	f.StringVar(&fl.q.Outcome, "outcome", "", "only this outcome: acked, dead, cancelled, dead_deleted or failed")
	f.StringVar(&fl.since, "since", "", "only entries that finished at or after this RFC 3339 time, or this long ago (24h)")
	f.StringVar(&fl.until, "until", "", "only entries that finished before this RFC 3339 time, or this long ago")
	f.IntVar(&fl.q.Limit, "limit", 0, "entries per page (the server's default: 100)")
	f.StringVar(&fl.q.Cursor, "cursor", "", "where to start: the next_cursor of the previous page")
	f.BoolVar(&fl.all, "all", false, "follow the pages to the last one")
	cmd.MarkFlagsMutuallyExclusive("cursor", "all")
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, args []string) error {
		if err := fl.resolve(args, time.Now()); err != nil {
			return err
		}
		page, err := fetchHistory(ctx, c, out, fl, args)
		if err != nil {
			return err
		}
		return out.result(page, func(w io.Writer) { printHistory(w, page) })
	})
}

// resolve reads --since and --until against now and takes the job from args, when given.
func (fl *historyFlags) resolve(args []string, now time.Time) error {
	var err error
	if fl.q.Since, err = historyTime("--since", fl.since, now); err != nil {
		return err
	}
	if fl.q.Until, err = historyTime("--until", fl.until, now); err != nil {
		return err
	}
	if len(args) == 2 {
		if fl.q.Topic != "" || fl.q.ID != "" {
			return errors.New("give the job as <topic> <id> or as --topic and --id, not both")
		}
		fl.q.Topic, fl.q.ID = args[0], args[1]
	}
	return nil
}

// historyTime reads a --since or --until value: an RFC 3339 time, or a duration before now.
func historyTime(flag, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%s %q: want an RFC 3339 time such as 2026-11-22T10:00:00Z, or a duration ago such as 24h", flag, s)
	}
	return now.Add(-d), nil
}

// fetchHistory reads one page, or with --all every page, which it joins into one.
func fetchHistory(ctx context.Context, c *apiclient.Client, out *output, fl historyFlags, args []string) (*apiv1.HistoryPage, error) {
	all := &apiv1.HistoryPage{Entries: []*apiv1.HistoryEntry{}}
	q := fl.q
	for {
		page, err := fetchHistoryPage(ctx, c, out, q, len(args) == 2)
		if err != nil {
			return nil, err
		}
		all.Entries = append(all.Entries, page.Entries...)
		all.NextCursor = page.NextCursor
		if !fl.all || page.NextCursor == "" {
			return all, nil
		}
		q.Cursor = page.NextCursor
	}
}

// fetchHistoryPage reads one page, through the job's own route when the job was given as
// arguments.
func fetchHistoryPage(ctx context.Context, c *apiclient.Client, out *output, q apiclient.HistoryQuery, ofJob bool) (*apiv1.HistoryPage, error) {
	ctx, cancel := out.bound(ctx, 0)
	defer cancel()
	if ofJob {
		return c.JobHistory(ctx, q.Topic, q.ID, q)
	}
	return c.History(ctx, q)
}

// printHistory writes one line per entry, and how to get the next page when there is one.
func printHistory(w io.Writer, page *apiv1.HistoryPage) {
	if len(page.Entries) == 0 {
		fmt.Fprintln(w, "no history")
	} else {
		tw := newTable(w)
		fmt.Fprintln(tw, "FINISHED_AT\tJOB\tOUTCOME\tATTEMPTS\tLAST_ERROR")
		for _, e := range page.Entries {
			fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%d\t%s\n", e.FinishedAt, e.Topic, e.ID, e.Outcome, e.Attempts,
				truncate(oneLine(e.LastError), historyErrorWidth))
		}
		tw.Flush()
	}
	if page.NextCursor != "" {
		fmt.Fprintf(w, "more: the same command with --cursor %s, or --all\n", page.NextCursor)
	}
}
