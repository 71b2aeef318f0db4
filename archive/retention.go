package archive

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// retainBatch is the batch size of Retain's deletes.
const retainBatch = 1000

// deleteBatchSQL deletes up to $2 rows that finished before $1, found through the finished_at
// index. "ctid = ANY(ARRAY(...))" rather than "ctid IN (...)": the planner turns IN into a
// join that may read the whole table, while ANY of an array is a TID scan of the batch alone.
const deleteBatchSQL = `DELETE FROM delayq_job_history WHERE ctid = ANY(ARRAY(
	SELECT ctid FROM delayq_job_history WHERE finished_at < $1 LIMIT $2))`

// DeleteOlderThan deletes the outcomes that finished more than age ago by PostgreSQL's clock,
// batch rows per statement, each statement its own transaction: a large backlog never holds
// locks, or grows the WAL, by more than one batch at a time, and an interruption keeps what
// was done. It returns the number of rows deleted, also when ctx ends or a statement fails.
func (s *Store) DeleteOlderThan(ctx context.Context, age time.Duration, batch int) (int64, error) {
	if age <= 0 {
		return 0, fmt.Errorf("%w: age %v is not positive", ErrInvalidArgument, age)
	}
	if batch < 1 {
		return 0, fmt.Errorf("%w: batch %d is not positive", ErrInvalidArgument, batch)
	}
	// One cutoff for every batch, so that the rows finishing meanwhile do not keep it going.
	var cutoff time.Time
	err := s.withConn(ctx, func(conn *pgxpool.Conn) error {
		return conn.QueryRow(ctx, "SELECT now() - make_interval(secs => $1)", age.Seconds()).Scan(&cutoff)
	})
	if err != nil {
		return 0, fmt.Errorf("archive: retention: %w", err)
	}
	var deleted int64
	for {
		var n int64
		err := s.withConn(ctx, func(conn *pgxpool.Conn) error {
			tag, err := conn.Exec(ctx, deleteBatchSQL, cutoff, batch)
			n = tag.RowsAffected()
			return err
		})
		if err != nil {
			return deleted, fmt.Errorf("archive: retention, after deleting %d rows: %w", deleted, err)
		}
		deleted += n
		if s.onDeleteBatch != nil {
			s.onDeleteBatch(n)
		}
		if n < int64(batch) {
			return deleted, nil
		}
	}
}

// Retain deletes the outcomes older than age at once and then every interval, until ctx ends;
// then it returns nil. Failures (PostgreSQL unreachable) are logged and retried at the next
// interval. An age or interval that is not positive is an error.
func (s *Store) Retain(ctx context.Context, age, every time.Duration) error {
	if age <= 0 || every <= 0 {
		return fmt.Errorf("%w: age %v and interval %v must be positive", ErrInvalidArgument, age, every)
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		n, err := s.DeleteOlderThan(ctx, age, retainBatch)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			s.log.Error("archive retention failed", "deleted", n, "err", err)
		} else if n > 0 {
			s.log.Info("archive retention", "deleted", n, "older_than", age)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
