// Package archive keeps the history of delayq's jobs in PostgreSQL: one row per end of a job
// (acked, dead, cancelled, dead and then deleted) and, optionally, per failed attempt. The
// archiver of `delayq server` moves outcomes there in batches from Redis; the history is then
// searched by topic, job id, outcome and time, newest first, and old rows are deleted by age.
//
// The table is delayq_job_history (migrations/); Open creates or upgrades it. A batch sent
// twice, as after a timeout whose insert went through, inserts nothing the second time: a row
// is identified by (topic, id, created_at, outcome, attempts, finished_at, entry).
package archive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The outcomes of a job that the archive records.
const (
	// Acked: a consumer acknowledged the job; its last attempt succeeded.
	Acked = "acked"
	// Dead: the job failed its last allowed attempt and went to the dead letters.
	Dead = "dead"
	// Cancelled: the job was cancelled before it completed.
	Cancelled = "cancelled"
	// DeadDeleted: a dead letter was deleted instead of being replayed.
	DeadDeleted = "dead_deleted"
	// Failed: an attempt failed and the job will be retried; recorded only if the archiver is
	// asked to keep every attempt.
	Failed = "failed"
)

// knownOutcome reports whether name is one of the outcome constants.
func knownOutcome(name string) bool {
	switch name {
	case Acked, Dead, Cancelled, DeadDeleted, Failed:
		return true
	}
	return false
}

// Outcome is one row of the history: a job as it was when it ended, or when one of its
// attempts failed.
type Outcome struct {
	Topic   string
	ID      string
	Outcome string // one of the outcome constants
	// Attempts is the number of attempts made, the one that ended included.
	Attempts int
	// Body is the job's payload; nil when the store keeps no bodies (Options.KeepBodies).
	Body   []byte
	Format int
	// Priority is the job's delayq priority; 0 for a job with a BeanstalkdPriority.
	Priority int
	// BeanstalkdPriority is the priority of a job put, released or buried over the beanstalkd
	// protocol (docs/beanstalkd.md), 0 to 2^32-1, as delayq.Job has it; nil for other jobs.
	BeanstalkdPriority *uint32
	MaxRetries         int
	// Snoozes counts the releases that put the job back for later without an attempt;
	// MaxSnoozes is their limit, 0 for none.
	Snoozes, MaxSnoozes int
	// TTR is kept to the millisecond, as Redis keeps it.
	TTR time.Duration
	// CreatedAt, RunAt and FinishedAt are kept to the microsecond. FinishedAt orders the history.
	CreatedAt, RunAt, FinishedAt time.Time
	LastError                    string
	CallbackURL                  string
	// Headers are nil when the job had none; an empty map comes back empty, not nil.
	Headers map[string]string
	// Entry is the id of the Redis history stream entry the outcome came from ("" for an
	// outcome from elsewhere); it tells apart two ends of a job alike in every other field (a
	// requeued dead job that dies again within the same millisecond). Queries leave it empty.
	Entry string
}

// Options configure a Store.
type Options struct {
	// KeepBodies stores the jobs' bodies. Defaults to false: bodies are left out (stored as
	// NULL), so that the history holds no payloads and stays small.
	KeepBodies bool
	// MaxConns bounds the connections to PostgreSQL. Defaults to pgxpool's default (4, or the
	// number of CPUs if greater); a URL's pool_max_conns applies when this is 0.
	MaxConns int32
	// Logger receives the errors of Retain, which keeps going after them. Defaults to
	// discarding them.
	Logger *slog.Logger
}

// Store reads and writes the job history in one PostgreSQL database. It is safe for
// concurrent use.
type Store struct {
	pool       *pgxpool.Pool
	keepBodies bool
	log        *slog.Logger

	// onDeleteBatch, if set, is called with the row count of each batch of DeleteOlderThan.
	onDeleteBatch func(int64)
}

// DefaultConnectTimeout bounds each connection's set-up when url sets no connect_timeout.
const DefaultConnectTimeout = 10 * time.Second

// Open connects to the PostgreSQL database at url (a postgres:// URL or key=value string as
// libpq reads them), creates or upgrades the history table, and returns the Store. A
// connection that is not set up within the URL's connect_timeout (DefaultConnectTimeout when
// it has none) fails.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	if opts.MaxConns < 0 {
		return nil, fmt.Errorf("archive: Options.MaxConns %d is negative", opts.MaxConns)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("archive: parsing the PostgreSQL URL: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// Without one, a server that takes the connection and never answers holds Open, and
		// every later call, for good.
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("archive: connecting to PostgreSQL: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("archive: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{pool: pool, keepBodies: opts.KeepBodies, log: log}, nil
}

// Close closes the Store's connections, waiting for those in use to be returned.
func (s *Store) Close() { s.pool.Close() }

// InvalidOutcomeError is the error of Insert for a batch with an outcome that cannot be stored;
// nothing of the batch is stored. Index lets the caller drop that one and send the rest.
type InvalidOutcomeError struct {
	Index  int    // the outcome's index in the batch
	Reason string // what is wrong with it
}

func (e *InvalidOutcomeError) Error() string {
	return fmt.Sprintf("archive: outcome %d of the batch: %s", e.Index, e.Reason)
}

// FilterError is the error of Query for a Filter it cannot run; Field names the field.
type FilterError struct {
	Field  string // "limit", "cursor", ...
	Reason string
}

func (e *FilterError) Error() string {
	return fmt.Sprintf("archive: filter %s: %s", e.Field, e.Reason)
}

// ErrInvalidArgument is matched by the errors of DeleteOlderThan and Retain for an age, batch
// size or interval out of range.
var ErrInvalidArgument = errors.New("archive: invalid argument")
