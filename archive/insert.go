package archive

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// insertSQL inserts a batch sent as one array per column: one statement, one round trip, and
// rows already there (a batch sent again) are skipped. A COPY into a temporary table followed
// by the same INSERT was measured slower for batches of 1000 (BenchmarkInsert).
const insertSQL = `
INSERT INTO delayq_job_history (topic, id, outcome, attempts, body, format, priority,
	max_retries, ttr_ms, created_at, run_at, finished_at, last_error, callback_url, headers, entry,
	beanstalkd_priority, snoozes, max_snoozes)
SELECT topic, id, outcome, attempts, body, format, priority,
	max_retries, ttr_ms, created_at, run_at, finished_at, last_error, callback_url, headers::jsonb, entry,
	beanstalkd_priority, snoozes, max_snoozes
FROM unnest($1::text[], $2::text[], $3::text[], $4::int4[], $5::bytea[], $6::int4[], $7::int4[],
	$8::int4[], $9::int8[], $10::timestamptz[], $11::timestamptz[], $12::timestamptz[],
	$13::text[], $14::text[], $15::text[], $16::text[], $17::int8[], $18::int4[], $19::int4[])
	AS b(topic, id, outcome, attempts, body, format, priority,
	max_retries, ttr_ms, created_at, run_at, finished_at, last_error, callback_url, headers, entry,
	beanstalkd_priority, snoozes, max_snoozes)
ON CONFLICT ON CONSTRAINT delayq_job_history_once DO NOTHING`

// columns holds a batch column by column, as insertSQL takes it.
type columns struct {
	topic, id, outcome           []string
	attempts                     []int32
	body                         [][]byte
	format, priority, maxRetry   []int32
	ttrMs                        []int64
	createdAt, runAt, finishedAt []time.Time
	lastError, callbackURL       []string
	headers                      []*string
	entry                        []string
	beanstalkdPriority           []*int64 // nil for jobs without one
	snoozes, maxSnoozes          []int32
}

// Insert stores a batch of outcomes in one round trip and returns how many rows it added:
// outcomes already stored, by an earlier send of the same batch or within this one, are
// skipped; so is a batch whose answer was lost with its connection and which went through, so
// the count can fall short then. A batch with an outcome that cannot be stored is refused whole, with an
// *InvalidOutcomeError.
func (s *Store) Insert(ctx context.Context, batch []Outcome) (int, error) {
	if len(batch) == 0 {
		return 0, nil
	}
	c, err := s.columnsOf(batch)
	if err != nil {
		return 0, err
	}
	var added int64
	err = s.withConn(ctx, func(conn *pgxpool.Conn) error {
		tag, err := conn.Exec(ctx, insertSQL, c.topic, c.id, c.outcome, c.attempts, c.body,
			c.format, c.priority, c.maxRetry, c.ttrMs, c.createdAt, c.runAt, c.finishedAt,
			c.lastError, c.callbackURL, c.headers, c.entry, c.beanstalkdPriority, c.snoozes, c.maxSnoozes)
		added = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("archive: inserting %d outcomes: %w", len(batch), err)
	}
	return int(added), nil
}

// columnsOf checks the batch and turns it into columns.
func (s *Store) columnsOf(batch []Outcome) (*columns, error) {
	n := len(batch)
	c := &columns{
		topic: make([]string, n), id: make([]string, n), outcome: make([]string, n),
		attempts: make([]int32, n), body: make([][]byte, n), format: make([]int32, n),
		priority: make([]int32, n), maxRetry: make([]int32, n), ttrMs: make([]int64, n),
		createdAt: make([]time.Time, n), runAt: make([]time.Time, n), finishedAt: make([]time.Time, n),
		lastError: make([]string, n), callbackURL: make([]string, n), headers: make([]*string, n),
		entry: make([]string, n), beanstalkdPriority: make([]*int64, n),
		snoozes: make([]int32, n), maxSnoozes: make([]int32, n),
	}
	for i, o := range batch {
		if reason := check(o); reason != "" {
			return nil, &InvalidOutcomeError{Index: i, Reason: reason}
		}
		c.topic[i], c.id[i], c.outcome[i] = text(o.Topic), text(o.ID), o.Outcome
		c.attempts[i], c.format[i] = int32(o.Attempts), int32(o.Format)
		c.priority[i], c.maxRetry[i] = int32(o.Priority), int32(o.MaxRetries)
		c.ttrMs[i] = o.TTR.Milliseconds()
		c.snoozes[i], c.maxSnoozes[i] = int32(o.Snoozes), int32(o.MaxSnoozes)
		c.createdAt[i], c.runAt[i], c.finishedAt[i] = o.CreatedAt, o.RunAt, o.FinishedAt
		c.lastError[i], c.callbackURL[i] = text(o.LastError), text(o.CallbackURL)
		c.entry[i] = text(o.Entry)
		if o.BeanstalkdPriority != nil {
			pri := int64(*o.BeanstalkdPriority)
			c.beanstalkdPriority[i] = &pri
		}
		if s.keepBodies {
			c.body[i] = o.Body
		}
		if o.Headers != nil {
			h, err := headersJSON(o.Headers)
			if err != nil {
				return nil, &InvalidOutcomeError{Index: i, Reason: "headers: " + err.Error()}
			}
			c.headers[i] = &h
		}
	}
	return c, nil
}

// check returns what keeps o from being stored, or "".
func check(o Outcome) string {
	const maxInt32 = 1<<31 - 1
	switch {
	case o.Topic == "":
		return "empty topic"
	case o.ID == "":
		return "empty id"
	case !knownOutcome(o.Outcome):
		return fmt.Sprintf("unknown outcome %q", o.Outcome)
	case o.FinishedAt.IsZero():
		return "no finish time"
	case o.CreatedAt.IsZero():
		return "no creation time"
	}
	// Times the API could not print either (RFC 3339 has four-digit years), and PostgreSQL
	// refuses some of.
	for _, t := range []time.Time{o.CreatedAt, o.RunAt, o.FinishedAt} {
		if y := t.Year(); y < 1 || y > 9999 {
			return fmt.Sprintf("time %v out of the years 1 to 9999", t)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"attempts", o.Attempts}, {"format", o.Format}, {"priority", o.Priority}, {"max retries", o.MaxRetries},
		{"snoozes", o.Snoozes}, {"max snoozes", o.MaxSnoozes}} {
		if f.v < -maxInt32-1 || f.v > maxInt32 {
			return fmt.Sprintf("%s %d out of the 32-bit range", f.name, f.v)
		}
	}
	return ""
}

// text makes s storable as PostgreSQL text, which takes neither NUL bytes nor invalid UTF-8: a
// consumer's error message may hold either, and refusing it would hold up the whole batch.
func text(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// headersJSON encodes headers as a JSON object; jsonb refuses \u0000, so NULs are replaced as
// in text (encoding/json replaces invalid UTF-8 itself).
func headersJSON(headers map[string]string) (string, error) {
	clean := make(map[string]string, len(headers))
	for k, v := range headers {
		clean[text(k)] = text(v)
	}
	b, err := json.Marshal(clean)
	return string(b), err
}
