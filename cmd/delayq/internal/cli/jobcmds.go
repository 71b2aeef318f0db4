package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/delayq/delayq/cmd/delayq/internal/apiclient"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// enqueueFlags are the flags of `delayq enqueue`.
type enqueueFlags struct {
	id, body, bodyBase64 string
	delay, ttr           time.Duration
	runAt                string
	maxRetries           int
	maxSnoozes           int
	backoff              string
	priority             int
	callbackURL          string
	headers              []string // name=value
	file                 string
	uniqueFor            time.Duration
	onConflict           string
}

func newEnqueueCmd() *cobra.Command {
	var fl enqueueFlags
	cmd := &cobra.Command{
		Use:   "enqueue <topic>",
		Short: "Enqueue a job, or every job of a JSON Lines file",
		Long: strings.TrimSpace(`
Enqueue one job described by the flags, or with --file every job of a JSON Lines file: one job
request object per line, as in the API (for example {"id":"o-1","body":{"order":1},"delay_ms":60000}).
A file is sent through the batch endpoint, 1000 jobs per request; each line succeeds or fails
alone, and the failures are listed with their line numbers.

A job with an id may keep it taken for a while after it ends (--unique-for): until then an
enqueue of the id fails as already_done, saying how the job ended and when. --on-conflict says
what to do when a job with the id exists: reject (fail as already_exists), keep it as it is, or
replace a delayed or ready one in place. The first line printed says whether the job was
created, kept or replaced. With --file, both flags apply to the lines with an id that do not
say otherwise.`),
		Example: `  delayq enqueue orders --body '{"order":42}' --delay 30m --header x-tenant=acme
  delayq enqueue orders --id order-42 --body '"cancel"' --run-at 2026-11-22T10:00:00Z --backoff 15s,3m,10m
  delayq enqueue orders --id order-42 --body '{"order":42}' --delay 30m --unique-for 24h
  delayq enqueue search-index --id doc-7 --delay 10s --on-conflict replace
  delayq enqueue orders --file jobs.jsonl`,
		Args: cobra.ExactArgs(1),
	}
	f := cmd.Flags()
	f.StringVar(&fl.id, "id", "", "job id, unique within the topic; empty: the server makes one")
	f.DurationVar(&fl.delay, "delay", 0, "due this long after the server receives it, such as 30s or 2h")
	f.StringVar(&fl.runAt, "run-at", "", "due at this RFC 3339 time instead")
	fl.addTemplateFlags(cmd)
	f.StringVar(&fl.file, "file", "", `JSON Lines file of job requests ("-" for standard input)`)
	f.IntVar(&fl.maxSnoozes, "max-snoozes", 0, "releases for later (snoozes) the job may take before the next makes it dead (default no limit)")
	f.DurationVar(&fl.uniqueFor, "unique-for", 0, "keep the job's id taken this long after the job ends, such as 24h: an enqueue of it fails as already_done until then; 0 for not at all (default the topic's, else the server's)")
	f.StringVar(&fl.onConflict, "on-conflict", "", "when a job with the id exists: reject (fail as already_exists), keep (leave it as it is) or replace (a delayed or ready one, in place) (default reject)")
	cmd.MarkFlagsMutuallyExclusive("delay", "run-at")
	for _, single := range []string{"id", "body", "body-base64", "delay", "run-at", "ttr", "max-retries", "max-snoozes", "backoff", "priority", "callback-url", "header"} {
		cmd.MarkFlagsMutuallyExclusive("file", single)
	}
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, args []string) error {
		uniqueFor, err := fl.uniqueForFlag(cmd)
		if err != nil {
			return err
		}
		if err := checkConflict(fl.onConflict); err != nil {
			return err
		}
		if fl.file != "" {
			return enqueueFile(ctx, c, out, args[0], fl.file, lineDefaults{uniqueFor: uniqueFor, onConflict: fl.onConflict})
		}
		req, err := fl.request(cmd)
		if err != nil {
			return err
		}
		req.UniqueFor, req.OnConflict = uniqueFor, fl.onConflict
		ctx, cancel := out.bound(ctx, 0)
		defer cancel()
		e, err := c.EnqueueAnswer(ctx, args[0], req)
		if err != nil {
			return err
		}
		return out.result(e.Job, func(w io.Writer) {
			fmt.Fprintln(w, enqueued(e, fl.onConflict))
			printJob(w, e.Job)
		})
	})
}

// uniqueForFlag reads --unique-for: nil when it is not given (the topic's or server's default
// applies), else a whole number of milliseconds, 0 for none.
func (fl *enqueueFlags) uniqueForFlag(cmd *cobra.Command) (*time.Duration, error) {
	if !cmd.Flags().Changed("unique-for") {
		return nil, nil
	}
	if err := wholeMs("--unique-for", fl.uniqueFor); err != nil {
		return nil, err
	}
	return &fl.uniqueFor, nil
}

// checkConflict checks --on-conflict before a request is sent.
func checkConflict(c string) error {
	switch c {
	case "", "reject", "keep", "replace":
		return nil
	}
	return fmt.Errorf("--on-conflict %q: want reject, keep or replace", c)
}

// wholeMs checks a duration flag that the API takes in milliseconds, 0 or more.
func wholeMs(flag string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%s %v must not be negative", flag, d)
	}
	if d%time.Millisecond != 0 {
		return fmt.Errorf("%s %v: want a whole number of milliseconds", flag, d)
	}
	return nil
}

// enqueued says what an enqueue did: created the job, or kept or replaced the one with its id
// (as onConflict asked).
func enqueued(e *apiclient.Enqueued, onConflict string) string {
	j := e.Job
	switch {
	case !e.Existed:
		return fmt.Sprintf("created %s/%s", j.Topic, j.ID)
	case onConflict == "replace":
		return fmt.Sprintf("replaced %s/%s (replaced %s)", j.Topic, j.ID, plural(j.Replaces, "time"))
	default:
		return fmt.Sprintf("kept %s/%s as it was: a job with this id exists", j.Topic, j.ID)
	}
}

// addTemplateFlags adds the flags of what a job is, apart from its id and due time: those of a
// schedule's job template too.
func (fl *enqueueFlags) addTemplateFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&fl.body, "body", "", `JSON payload, such as '{"order":42}' or '"text"'`)
	f.StringVar(&fl.bodyBase64, "body-base64", "", "binary payload, in standard base64")
	f.DurationVar(&fl.ttr, "ttr", 0, "lease length once reserved (server default 30s)")
	f.IntVar(&fl.maxRetries, "max-retries", 0, "retries after the first attempt before the job goes dead (server default 5: after 15s, 3m, 10m, 30m, 1h; 8 uses the default backoff up to 15h)")
	f.StringVar(&fl.backoff, "backoff", "", "delays before each retry, such as 15s,3m,10m (the last repeats; default 15s,3m,10m,30m,1h,2h,6h,15h)")
	f.IntVar(&fl.priority, "priority", 0, "among due jobs, higher goes first")
	f.StringVar(&fl.callbackURL, "callback-url", "", "push delivery: the server POSTs the job to this URL when due")
	f.StringArrayVar(&fl.headers, "header", nil, "name=value kept with the job and returned with it, such as x-tenant=acme; repeatable")
	cmd.MarkFlagsMutuallyExclusive("body", "body-base64")
}

// request builds the job request the flags describe.
func (fl *enqueueFlags) request(cmd *cobra.Command) (apiclient.JobRequest, error) {
	r := apiclient.JobRequest{ID: fl.id, Delay: fl.delay, TTR: fl.ttr, Priority: fl.priority, CallbackURL: fl.callbackURL}
	if fl.body != "" {
		var v any
		if err := json.Unmarshal([]byte(fl.body), &v); err != nil {
			return r, fmt.Errorf(`--body is not JSON (%v); give text as a JSON string, such as --body '"hello"', or binary data with --body-base64`, err)
		}
		r.Body = json.RawMessage(fl.body)
	}
	if cmd.Flags().Changed("body-base64") {
		b, err := base64.StdEncoding.DecodeString(fl.bodyBase64)
		if err != nil {
			return r, errors.New("--body-base64 is not standard base64")
		}
		r.Binary = b
	}
	if fl.runAt != "" {
		t, err := parseRunAt(fl.runAt)
		if err != nil {
			return r, err
		}
		r.RunAt = t
	}
	if fl.delay < 0 {
		return r, fmt.Errorf("--delay %v must not be negative", fl.delay)
	}
	if cmd.Flags().Changed("max-retries") {
		n := fl.maxRetries
		r.MaxRetries = &n
	}
	if fl.maxSnoozes != 0 {
		r.MaxSnoozes = &fl.maxSnoozes
	}
	if fl.backoff != "" {
		steps, err := parseDurations(fl.backoff)
		if err != nil {
			return r, fmt.Errorf("--backoff: %w", err)
		}
		r.Backoff = steps
	}
	var err error
	if r.Headers, err = parseHeaders(fl.headers); err != nil {
		return r, err
	}
	return r, nil
}

// parseHeaders reads --header flags, name=value each, into a map; nil when there are none.
// The server checks names and values; a name given twice here would silently lose a value.
func parseHeaders(flags []string) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(flags))
	for _, f := range flags {
		name, value, ok := strings.Cut(f, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--header %q: want name=value", f)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--header %s is given twice", name)
		}
		out[name] = value
	}
	return out, nil
}

func newGetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get <topic> <id>",
		Short: "Show a job in any state, or how and when it ended while its id stays taken",
		Args:  cobra.ExactArgs(2),
	}
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, args []string) error {
		ctx, cancel := out.bound(ctx, 0)
		defer cancel()
		j, err := c.Get(ctx, args[0], args[1])
		var done *apiclient.DoneError
		if errors.As(err, &done) {
			// An ended job that keeps its id taken (unique_for) is an answer, not a failure.
			return out.result(done.Job, func(w io.Writer) { printEndedJob(w, &done.Job) })
		}
		if err != nil {
			return err
		}
		return out.result(j, func(w io.Writer) { printJob(w, j) })
	})
}

func newCancelCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cancel <topic> <id>",
		Short: "Cancel a job in any state; it is never delivered again",
		Args:  cobra.ExactArgs(2),
	}
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, args []string) error {
		ctx, cancel := out.bound(ctx, 0)
		defer cancel()
		if err := c.Cancel(ctx, args[0], args[1]); err != nil {
			return err
		}
		out.done("cancelled %s/%s", args[0], args[1])
		return nil
	})
}

func newRescheduleCmd() *cobra.Command {
	var delay time.Duration
	var runAt string
	cmd := &cobra.Command{
		Use:     "reschedule <topic> <id>",
		Short:   "Move a delayed or ready job to a new due time",
		Example: "  delayq reschedule orders order-42 --delay 10m\n  delayq reschedule orders order-42 --run-at 2026-11-22T10:00:00Z",
		Args:    cobra.ExactArgs(2),
	}
	cmd.Flags().DurationVar(&delay, "delay", 0, "due this long from now")
	cmd.Flags().StringVar(&runAt, "run-at", "", "due at this RFC 3339 time")
	cmd.MarkFlagsMutuallyExclusive("delay", "run-at")
	cmd.MarkFlagsOneRequired("delay", "run-at")
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, args []string) error {
		ctx, cancel := out.bound(ctx, 0)
		defer cancel()
		var j *apiv1.Job
		var err error
		if runAt != "" {
			t, perr := parseRunAt(runAt)
			if perr != nil {
				return perr
			}
			j, err = c.RescheduleAt(ctx, args[0], args[1], t)
		} else {
			if delay < 0 {
				return fmt.Errorf("--delay %v must not be negative", delay)
			}
			j, err = c.Reschedule(ctx, args[0], args[1], delay)
		}
		if err != nil {
			return err
		}
		return out.result(j, func(w io.Writer) { printJob(w, j) })
	})
}
