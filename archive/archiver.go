package archive

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync/atomic"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/core"
	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/store"
)

// ArchiverConfig configures an Archiver. Zero fields take the defaults.
type ArchiverConfig struct {
	// Keep is how many outcomes each partition's history stream in Redis holds while they wait
	// for the archiver (PostgreSQL down or slow): past it the oldest are dropped, and counted.
	// Defaults to 100,000.
	Keep int64
	// Failed archives every failed attempt that will be retried, besides the jobs' ends.
	Failed bool
	// Batch is the most outcomes written to PostgreSQL at once. Defaults to 1000.
	Batch int
	// Interval is how often an archiver that found nothing to do looks again. Defaults to 1s.
	Interval time.Duration
	// ClaimAfter is how long outcomes that another archiver read and did not archive (it
	// stopped, or died, mid-batch) wait before this one takes them over. Defaults to 30s.
	ClaimAfter time.Duration
	// Hold is how long archiving stays on after an archiver last renewed it; a running
	// Archiver renews it every third of Hold. When no archiver has run for Hold, Clients stop
	// appending job ends (within 5 s more): a namespace that once had an archive does not go
	// on filling Redis without one. Defaults to a minute.
	Hold time.Duration
	// Consumer names this archiver among those sharing the work. Defaults to the host name
	// and process id with a random suffix.
	Consumer string
	// Logger receives failures. Defaults to the Client's default, slog.Default().
	Logger *slog.Logger
}

// Archiver moves the outcomes of a delayq namespace's jobs from Redis into a Store. Any number
// of archivers may run on one namespace, in any processes: each outcome is archived once, and
// one that an archiver read but could not write is archived later, by it or by another.
type Archiver struct {
	client *delayq.Client
	st     *store.Store
	pg     *Store
	cfg    ArchiverConfig
	log    *slog.Logger

	archived, failures atomic.Int64
	renewed            time.Time // when Run last turned archiving on
}

// NewArchiver returns an Archiver of client's namespace into pg.
func NewArchiver(client *delayq.Client, pg *Store, cfg ArchiverConfig) (*Archiver, error) {
	if client == nil || pg == nil {
		return nil, errors.New("archive: NewArchiver needs a Client and a Store")
	}
	if cfg.Keep == 0 {
		cfg.Keep = 100_000
	}
	if cfg.Batch == 0 {
		cfg.Batch = 1000
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Second
	}
	if cfg.ClaimAfter == 0 {
		cfg.ClaimAfter = 30 * time.Second
	}
	if cfg.Hold == 0 {
		cfg.Hold = time.Minute
	}
	if cfg.Keep < 1 || cfg.Batch < 1 || cfg.Batch > 10_000 || cfg.Interval < 0 || cfg.ClaimAfter < 0 || cfg.Hold < 0 {
		return nil, fmt.Errorf("archive: Keep %d must be positive, Batch %d within 1 to 10000, Interval and ClaimAfter not negative", cfg.Keep, cfg.Batch)
	}
	if cfg.Consumer == "" {
		cfg.Consumer = consumerName()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Archiver{client: client, st: client.Core(core.Pass).Store(), pg: pg, cfg: cfg, log: cfg.Logger}, nil
}

func consumerName() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

// Enable turns archiving on for client's namespace until Disable: from then on (within
// seconds, for Clients in other processes) the scripts that end jobs append their outcomes to
// Redis streams, keeping at most keep per partition, and failed attempts too when failed is
// set. An Archiver's Run turns it on for as long as an archiver runs instead (see
// ArchiverConfig.Hold).
func Enable(ctx context.Context, client *delayq.Client, keep int64, failed bool) error {
	return enable(ctx, client, store.ArchiveSetting{Keep: keep, Failed: failed}, 0)
}

func enable(ctx context.Context, client *delayq.Client, a store.ArchiveSetting, hold time.Duration) error {
	in := client.Core(core.Pass)
	if err := in.Store().WriteArchiveSetting(ctx, a, hold); err != nil {
		return err
	}
	return in.ReadArchiveSetting(ctx)
}

// Disable turns archiving off for client's namespace. Outcomes already waiting stay until an
// archiver moves them.
func Disable(ctx context.Context, client *delayq.Client) error {
	return Enable(ctx, client, 0, false)
}

// Enable turns archiving on for the Archiver's Hold; Run renews it.
func (a *Archiver) Enable(ctx context.Context) error {
	err := enable(ctx, a.client, store.ArchiveSetting{Keep: a.cfg.Keep, Failed: a.cfg.Failed}, a.cfg.Hold)
	if err == nil {
		a.renewed = time.Now()
	}
	return err
}

// renew keeps archiving on while this Archiver runs.
func (a *Archiver) renew(ctx context.Context) {
	if time.Since(a.renewed) < a.cfg.Hold/3 {
		return
	}
	if err := a.Enable(ctx); err != nil && ctx.Err() == nil {
		a.log.Warn("archive: renewing the archive setting", "err", err)
	}
}

// maxBackoff bounds the wait between failed passes.
const maxBackoff = 5 * time.Second

// Run turns archiving on and moves outcomes until ctx ends; then it returns nil. A failure to
// reach Redis (at start too) or to write PostgreSQL is logged and tried again: the outcomes
// wait in Redis.
func (a *Archiver) Run(ctx context.Context) error {
	backoff := a.cfg.Interval
	// Redis unreachable at start is waited out as it is later.
	for {
		err := a.Enable(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		a.failures.Add(1)
		a.log.Warn("archive: turning archiving on", "err", err, "retry_in", backoff)
		backoff = min(2*backoff+a.cfg.Interval, maxBackoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
	}
	backoff = a.cfg.Interval
	for {
		a.renew(ctx)
		full, err := a.pass(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			a.failures.Add(1)
			a.log.Warn("archive: outcomes wait in Redis", "err", err, "retry_in", backoff)
			// Doubling, up to a few seconds: an outage ends unannounced, and its backlog
			// should start moving soon after.
			backoff = min(2*backoff+a.cfg.Interval, maxBackoff)
		default:
			backoff = a.cfg.Interval
			if full {
				continue // more are waiting
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
	}
}

// pass archives a batch from every partition of every topic; full reports whether a batch was
// full, so that more may be waiting.
func (a *Archiver) pass(ctx context.Context) (full bool, err error) {
	topics, deleted, err := a.st.HistoryTopics(ctx)
	if err != nil {
		return false, err
	}
	// A partition that Redis cannot serve (a shard down, a key of the wrong type) is passed over
	// and reported, so that it does not hold up the others; PostgreSQL failing fails every
	// partition alike, and ends the pass.
	var first error
	for topic, n := range topics {
		failed := false
		for i := range n {
			got, err := a.archivePartition(ctx, topic, a.st.Partition(topic, i))
			var we *writeError
			switch {
			case errors.As(err, &we), ctx.Err() != nil:
				return full, err
			case err != nil:
				failed = true
				if first == nil {
					first = err
				}
				a.log.Warn("archive: a partition's outcomes wait in Redis", "topic", topic, "partition", i, "err", err)
			}
			full = full || got == a.cfg.Batch
		}
		if deleted[topic] && !failed {
			if _, err := a.st.ForgetHistory(ctx, topic, n); err != nil && first == nil {
				first = err
			}
		}
	}
	return full, first
}

// writeError is a failure to write to PostgreSQL.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// archivePartition moves one batch of a partition's outcomes and returns its size.
func (a *Archiver) archivePartition(ctx context.Context, topic string, p keys.Partition) (int, error) {
	entries, err := a.st.ReadHistory(ctx, p, a.cfg.Consumer, a.cfg.Batch, a.cfg.ClaimAfter)
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	batch := make([]Outcome, 0, len(entries))
	var skipped []string
	for _, e := range entries {
		if e.Err != nil {
			skipped = append(skipped, e.StreamID)
			a.log.Warn("archive: an outcome could not be read and is skipped", "topic", topic, "err", e.Err)
			continue
		}
		batch = append(batch, outcomeOf(topic, e))
	}
	for {
		_, err := a.pg.Insert(ctx, batch)
		// An outcome that can never be stored is skipped, or it would hold up its partition
		// for good; the rest of the batch is written.
		var invalid *InvalidOutcomeError
		if errors.As(err, &invalid) && invalid.Index >= 0 && invalid.Index < len(batch) {
			a.log.Warn("archive: an outcome cannot be stored and is skipped", "topic", topic,
				"id", batch[invalid.Index].ID, "err", err)
			skipped = append(skipped, batch[invalid.Index].Entry)
			batch = append(batch[:invalid.Index], batch[invalid.Index+1:]...)
			continue
		}
		if err != nil {
			return 0, &writeError{fmt.Errorf("archive: writing %d outcomes of %s: %w", len(batch), topic, err)}
		}
		break
	}
	archived := make([]string, len(batch))
	for i, o := range batch {
		archived[i] = o.Entry
	}
	if err := a.st.AckHistory(ctx, p, archived, skipped); err != nil {
		return 0, err // archived; they come again, and are inserted once
	}
	a.archived.Add(int64(len(batch)))
	return len(entries), nil
}

// outcomeOf converts a history stream entry to a row.
func outcomeOf(topic string, e store.HistoryEntry) Outcome {
	r := e.Record
	o := Outcome{
		Topic: topic, ID: r.ID, Outcome: e.Outcome, Attempts: e.Attempts,
		Body: r.Body, Format: r.Format, Priority: r.Priority, MaxRetries: r.MaxRetries,
		Snoozes: r.Snoozes, MaxSnoozes: r.MaxSnoozes,
		TTR:        time.Duration(r.TTRMs) * time.Millisecond,
		CreatedAt:  time.UnixMilli(r.CreatedMs).UTC(),
		RunAt:      time.UnixMilli(r.RunAtMs).UTC(),
		FinishedAt: time.UnixMilli(e.AtMs).UTC(),
		LastError:  r.LastError, CallbackURL: r.Callback, Headers: r.Headers,
		Entry: e.StreamID,
	}
	// A beanstalkd job's stored priority is store.RankBase plus its beanstalkd priority; it is
	// kept as delayq.Job shows it (see jobFromRecord).
	if r.Priority >= store.RankBase && r.Priority-store.RankBase <= math.MaxUint32 {
		pri := uint32(r.Priority - store.RankBase)
		o.Priority, o.BeanstalkdPriority = 0, &pri
	}
	return o
}

// Backlog is what waits in Redis to be archived.
type Backlog struct {
	Waiting int64 // outcomes in the history streams
	Dropped int64 // outcomes dropped in all because a stream was full
}

// Backlog sums the history streams of every partition of every topic.
func (a *Archiver) Backlog(ctx context.Context) (Backlog, error) {
	topics, _, err := a.st.HistoryTopics(ctx)
	if err != nil {
		return Backlog{}, err
	}
	var b Backlog
	for topic, n := range topics {
		for i := range n {
			w, d, err := a.st.HistoryBacklog(ctx, a.st.Partition(topic, i))
			if err != nil {
				return b, err
			}
			b.Waiting += w
			b.Dropped += d
		}
	}
	return b, nil
}

// Archived returns how many outcomes this Archiver has written.
func (a *Archiver) Archived() int64 { return a.archived.Load() }

// Failures returns how many of this Archiver's passes failed.
func (a *Archiver) Failures() int64 { return a.failures.Load() }
