package archive

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BenchmarkInsert stores batches of 1000 outcomes with 100-byte bodies and reports rows/s:
// "unnest" is Insert; "copy" is the other way measured, a COPY into a temporary table and then
// the same INSERT ... ON CONFLICT DO NOTHING from it.
//
//	go test -run '^$' -bench BenchmarkInsert -benchtime 3s ./archive/
func BenchmarkInsert(b *testing.B) {
	for _, bc := range []struct {
		name   string
		insert func(*Store) func(context.Context, []Outcome) (int, error)
	}{
		{"unnest", func(s *Store) func(context.Context, []Outcome) (int, error) { return s.Insert }},
		{"copy", func(s *Store) func(context.Context, []Outcome) (int, error) {
			return func(ctx context.Context, batch []Outcome) (int, error) { return insertByCopy(ctx, s, batch) }
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, _ := openStore(b, Options{KeepBodies: true})
			insert := bc.insert(s)
			ctx := context.Background()
			const size = 1000
			body := bytes.Repeat([]byte("x"), 100)
			batch := outcomes("bench", size)
			i := 0
			for b.Loop() {
				for j := range batch {
					batch[j].ID = fmt.Sprintf("j%d", i*size+j)
					batch[j].Body = body
				}
				i++
				if n, err := insert(ctx, batch); err != nil || n != size {
					b.Fatalf("insert = %d, %v", n, err)
				}
			}
			b.ReportMetric(float64(i*size)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// insertByCopy is Insert through COPY, for BenchmarkInsert's comparison.
func insertByCopy(ctx context.Context, s *Store, batch []Outcome) (int, error) {
	c, err := s.columnsOf(batch)
	if err != nil {
		return 0, err
	}
	cols := []string{"topic", "id", "outcome", "attempts", "body", "format", "priority",
		"max_retries", "ttr_ms", "created_at", "run_at", "finished_at", "last_error", "callback_url", "headers"}
	var added int64
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE batch (topic text, id text, outcome text,
			attempts int4, body bytea, format int4, priority int4, max_retries int4, ttr_ms int8,
			created_at timestamptz, run_at timestamptz, finished_at timestamptz, last_error text,
			callback_url text, headers jsonb) ON COMMIT DROP`); err != nil {
			return err
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"batch"}, cols, pgx.CopyFromSlice(len(batch), func(i int) ([]any, error) {
			return []any{c.topic[i], c.id[i], c.outcome[i], c.attempts[i], c.body[i], c.format[i],
				c.priority[i], c.maxRetry[i], c.ttrMs[i], c.createdAt[i], c.runAt[i], c.finishedAt[i],
				c.lastError[i], c.callbackURL[i], c.headers[i]}, nil
		}))
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO delayq_job_history (topic, id, outcome, attempts, body,
			format, priority, max_retries, ttr_ms, created_at, run_at, finished_at, last_error,
			callback_url, headers) SELECT * FROM batch
			ON CONFLICT ON CONSTRAINT delayq_job_history_once DO NOTHING`)
		added = tag.RowsAffected()
		return err
	})
	return int(added), err
}

// BenchmarkDeleteOlderThan measures retention: rows/s deleted by DeleteOlderThan in batches of
// 1000 from a table of old rows (each b.N row inserted first, outside the timing), while rows
// newer than the cutoff stay.
//
//	go test -run '^$' -bench BenchmarkDeleteOlderThan -benchtime 50000x ./archive/
func BenchmarkDeleteOlderThan(b *testing.B) {
	s, _ := openStore(b, Options{})
	ctx := context.Background()
	old := time.Now().Add(-48 * time.Hour)
	for i := 0; i < b.N; i += 1000 {
		batch := outcomes("bench", min(1000, b.N-i))
		for j := range batch {
			batch[j].ID = fmt.Sprintf("j%d", i+j)
			batch[j].FinishedAt = old
		}
		if _, err := s.Insert(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	n, err := s.DeleteOlderThan(ctx, 24*time.Hour, 1000)
	if err != nil || n != int64(b.N) {
		b.Fatalf("deleted %d, %v; want %d", n, err, b.N)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
}
