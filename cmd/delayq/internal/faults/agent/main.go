// Command agent is the process that delayq's fault-injection suite starts, kills and pauses. It
// produces, consumes or cancels jobs through the delayq library (or through a delayq server's
// HTTP API) and writes each event to an append-only JSONL log, one line per event.
//
// Roles (-role): produce, work, cancel, http-produce, http-work and webhook; see the flags of
// each. The agent stops by itself when its role is done, on SIGTERM or SIGINT (a worker then
// stops gracefully), or when -max-time passes.
//
// The environment variable DELAYQ_AGENT_CLOCK_SKEW (a Go duration such as 1h or -1h) skews the
// agent's notion of now: every local time the agent passes to the library (an absolute RunAt
// computed from -run-at-lead) is computed from the skewed clock. Log timestamps are not skewed:
// they are the observer's record.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/faults"
	"github.com/delayq/delayq/internal/redisurl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
}

// options are the agent's flags.
type options struct {
	role, name, logPath      string
	redisURL, ns, topic      string
	partitions               int
	maxTime                  time.Duration
	waitReplicas             int
	waitTimeout              time.Duration
	skew                     time.Duration
	prefix                   string
	n, first, batch, conc    int
	delay, spread, runAtLead time.Duration
	at                       int64
	ttr                      time.Duration
	backoff                  string
	maxRetries               int
	pad                      int
	rate                     float64
	sleep                    time.Duration
	every                    int
	server, listen           string
	hangup                   int
	resend                   bool
	callback                 string
}

func parse(args []string, getenv func(string) string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.StringVar(&o.role, "role", "", "produce, work, cancel, http-produce, http-work or webhook")
	fs.StringVar(&o.name, "name", "", "the process's name in its log; defaults to the role")
	fs.StringVar(&o.logPath, "log", "", "the JSONL event log to append to (required)")
	fs.StringVar(&o.redisURL, "redis", "", "Redis URL: redis://, redis+sentinel:// or redis+cluster://")
	fs.StringVar(&o.ns, "ns", "delayq", "key namespace")
	fs.StringVar(&o.topic, "topic", "faults", "topic")
	fs.IntVar(&o.partitions, "partitions", 0, "partitions of a new topic (0: the library's default)")
	fs.DurationVar(&o.maxTime, "max-time", 10*time.Minute, "exit after this long whatever happens")
	fs.IntVar(&o.waitReplicas, "wait-replicas", 0, "confirm each enqueue with WAIT on this many replicas")
	fs.DurationVar(&o.waitTimeout, "wait-timeout", time.Second, "how long WAIT waits")
	fs.StringVar(&o.prefix, "prefix", "job", "producer and canceller: job ids are <prefix>-<n>")
	fs.IntVar(&o.n, "n", 1000, "producer and canceller: how many job numbers")
	fs.IntVar(&o.first, "first", 0, "producer and canceller: the first job number")
	fs.IntVar(&o.batch, "batch", 100, "producer: jobs per enqueue call (1: Enqueue one at a time)")
	fs.IntVar(&o.conc, "concurrency", 10, "producer: calls in flight; worker: handler slots")
	fs.DurationVar(&o.delay, "delay", 0, "producer: each job's Delay")
	fs.DurationVar(&o.spread, "spread", 0, "producer: add up to this much to each job's Delay, by its number")
	fs.DurationVar(&o.runAtLead, "run-at-lead", 0, "producer: give each job RunAt = (skewed) now + this instead of a Delay")
	fs.Int64Var(&o.at, "at", 0, "producer: give every job this RunAt (Unix ms) instead of a Delay")
	fs.DurationVar(&o.ttr, "ttr", 0, "producer: each job's TTR (0: the default)")
	fs.StringVar(&o.backoff, "backoff", "", "producer: retry backoff steps in ms, comma-separated (empty: the default)")
	fs.IntVar(&o.maxRetries, "max-retries", -1, "producer: each job's MaxRetries (-1: the default)")
	fs.IntVar(&o.pad, "pad", 0, "producer: body padding in bytes")
	fs.Float64Var(&o.rate, "rate", 0, "producer and canceller: jobs per second (0: as fast as possible)")
	fs.DurationVar(&o.sleep, "sleep", 0, "worker: how long each handler runs before it acks")
	fs.IntVar(&o.every, "every", 10, "canceller: cancel every this many job numbers")
	fs.StringVar(&o.server, "server", "", "http roles: the delayq server's base URL")
	fs.IntVar(&o.hangup, "hangup", 0, "http-work: hang up every this many reserves 0 to 3 ms after sending them (0: never)")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:0", "webhook: the address to receive callbacks on")
	fs.StringVar(&o.callback, "callback", "", "http-produce: make push jobs with this callback URL")
	fs.BoolVar(&o.resend, "resend", false, "http-produce: enqueue each job alone and send the identical request again while its outcome is unknown (a 5xx, a broken connection, a timeout)")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.logPath == "" || o.role == "" {
		return nil, errors.New("-role and -log are required")
	}
	if o.name == "" {
		o.name = o.role
	}
	if s := getenv("DELAYQ_AGENT_CLOCK_SKEW"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("DELAYQ_AGENT_CLOCK_SKEW: %w", err)
		}
		o.skew = d
	}
	return o, nil
}

// now is the agent's clock, skewed by DELAYQ_AGENT_CLOCK_SKEW.
func (o *options) now() time.Time { return time.Now().Add(o.skew) }

func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	o, err := parse(args, getenv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.maxTime)
	defer cancel()
	log, err := faults.OpenLog(o.logPath, o.name)
	if err != nil {
		return err
	}
	log.Write(faults.Event{Kind: faults.Start})
	err = runRole(ctx, o, log, stderr)
	if err == nil {
		log.Write(faults.Event{Kind: faults.Done})
	}
	return errors.Join(err, log.Close())
}

func runRole(ctx context.Context, o *options, log *faults.Log, stderr io.Writer) error {
	switch o.role {
	case "http-produce":
		return httpProduce(ctx, o, log)
	case "http-work":
		return httpWork(ctx, o, log)
	case "webhook":
		return webhook(ctx, o, log)
	}
	rdb, err := redisurl.NewClient(o.redisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	c, err := newClient(ctx, o, rdb, log, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	switch o.role {
	case "produce":
		return produce(ctx, o, c, log)
	case "work":
		return work(ctx, o, c, log)
	case "cancel":
		return cancelJobs(ctx, o, c, log)
	}
	return fmt.Errorf("unknown role %q", o.role)
}

func newClient(ctx context.Context, o *options, rdb redis.UniversalClient, log *faults.Log, stderr io.Writer) (*delayq.Client, error) {
	wh := &warnHandler{log: log, next: slog.NewTextHandler(stderr, nil), armed: &atomic.Bool{}}
	logger := slog.New(wh)
	cfg := delayq.Config{
		Namespace:    o.ns,
		Partitions:   o.partitions,
		Logger:       logger,
		WaitReplicas: o.waitReplicas,
		WaitTimeout:  o.waitTimeout,
	}
	c, err := delayq.New(ctx, rdb, cfg)
	// Start-up warnings about the server's settings are the scenario's choice, not errors.
	wh.armed.Store(true)
	return c, err
}

// backoffSteps parses -backoff.
func (o *options) backoffSteps() ([]time.Duration, error) {
	if o.backoff == "" {
		return nil, nil
	}
	var out []time.Duration
	for _, f := range strings.Split(o.backoff, ",") {
		ms, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("-backoff: %w", err)
		}
		out = append(out, time.Duration(ms)*time.Millisecond)
	}
	return out, nil
}

// warnHandler copies the library's warnings into the event log, so that a scenario can count
// errors that never reached a caller, and passes every record on to next.
type warnHandler struct {
	log   *faults.Log
	next  slog.Handler
	armed *atomic.Bool // copy warnings from now on
}

func (h *warnHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *warnHandler) Handle(ctx context.Context, r slog.Record) error {
	// The handler acks each job itself to learn the outcome; the Worker's own ack that follows
	// repeats it with the same lease, which answers as the first did and logs nothing.
	if h.armed.Load() && r.Level >= slog.LevelWarn {
		text := r.Message
		r.Attrs(func(a slog.Attr) bool {
			text += " " + a.String()
			return true
		})
		h.log.Write(faults.Event{Kind: faults.Warn, Err: text})
	}
	return h.next.Handle(ctx, r)
}

func (h *warnHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &warnHandler{log: h.log, next: h.next.WithAttrs(as), armed: h.armed}
}

func (h *warnHandler) WithGroup(name string) slog.Handler {
	return &warnHandler{log: h.log, next: h.next.WithGroup(name), armed: h.armed}
}
