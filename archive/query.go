package archive

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Limits of Filter.Limit.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Filter selects outcomes for Query. Zero fields select everything.
type Filter struct {
	Topic string
	// ID selects one job's outcomes; it needs Topic, as ids are unique within a topic only.
	ID      string
	Outcome string // one of the outcome constants
	// Since and Until bound FinishedAt: Since <= FinishedAt < Until.
	Since, Until time.Time
	// Limit is the page size, 1 to MaxLimit. Defaults to DefaultLimit.
	Limit int
	// Cursor is Page.Next of the previous page; empty for the first page.
	Cursor string
}

// Page is one page of Query's answer.
type Page struct {
	// Outcomes are newest first: by FinishedAt, then by the order of insertion.
	Outcomes []Outcome
	// Next is the Filter.Cursor of the next page, with the same filter; empty on the last page.
	Next string
}

// cursor is the position after the last row of a page, in the order of Query.
type cursor struct {
	finishedAt int64 // microseconds since the Unix epoch, as PostgreSQL keeps them
	seq        int64
}

// cursorLen is the length of an encoded cursor's bytes: two big-endian int64s.
const cursorLen = 16

// String returns the cursor's opaque form.
func (c cursor) String() string {
	var b [cursorLen]byte
	binary.BigEndian.PutUint64(b[:8], uint64(c.finishedAt))
	binary.BigEndian.PutUint64(b[8:], uint64(c.seq))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// parseCursor reads the form of cursor.String.
func parseCursor(s string) (cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != cursorLen {
		return cursor{}, &FilterError{Field: "cursor", Reason: "malformed; pass Page.Next unchanged"}
	}
	c := cursor{finishedAt: int64(binary.BigEndian.Uint64(b[:8])), seq: int64(binary.BigEndian.Uint64(b[8:]))}
	// No row finished outside the years 1 to 9999 (Insert refuses such times), and PostgreSQL
	// fails a query on some of those instants.
	if y := time.UnixMicro(c.finishedAt).Year(); c.seq <= 0 || y < 1 || y > 9999 {
		return cursor{}, &FilterError{Field: "cursor", Reason: "malformed; pass Page.Next unchanged"}
	}
	return c, nil
}

// validate checks f and returns its limit and cursor (nil for the first page).
func (f Filter) validate() (int, *cursor, error) {
	limit := f.Limit
	switch {
	case limit == 0:
		limit = DefaultLimit
	case limit < 1 || limit > MaxLimit:
		return 0, nil, &FilterError{Field: "limit", Reason: fmt.Sprintf("%d is not within 1..%d", f.Limit, MaxLimit)}
	}
	if f.ID != "" && f.Topic == "" {
		return 0, nil, &FilterError{Field: "id", Reason: "needs a topic"}
	}
	if f.Outcome != "" && !knownOutcome(f.Outcome) {
		return 0, nil, &FilterError{Field: "outcome", Reason: fmt.Sprintf("unknown outcome %q", f.Outcome)}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return 0, nil, &FilterError{Field: "until", Reason: "not after since"}
	}
	if f.Cursor == "" {
		return limit, nil, nil
	}
	c, err := parseCursor(f.Cursor)
	if err != nil {
		return 0, nil, err
	}
	return limit, &c, nil
}

// selectColumns are the columns Query reads, in the order of scanOutcome.
const selectColumns = `seq, topic, id, outcome, attempts, body, format, priority, max_retries,
	ttr_ms, created_at, run_at, finished_at, last_error, callback_url, headers, beanstalkd_priority,
	snoozes, max_snoozes`

// querySQL returns the statement and arguments of f's page of limit rows, plus one that tells
// whether there is a next page.
func querySQL(f Filter, limit int, after *cursor) (string, []any) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.Topic != "" {
		where = append(where, "topic = "+arg(f.Topic))
	}
	if f.ID != "" {
		where = append(where, "id = "+arg(f.ID))
	}
	if f.Outcome != "" {
		where = append(where, "outcome = "+arg(f.Outcome))
	}
	if !f.Since.IsZero() {
		where = append(where, "finished_at >= "+arg(f.Since))
	}
	if !f.Until.IsZero() {
		where = append(where, "finished_at < "+arg(f.Until))
	}
	if after != nil {
		// A row comparison, which the (…, finished_at, seq) indexes serve as a range.
		where = append(where, fmt.Sprintf("(finished_at, seq) < (%s, %s)", arg(time.UnixMicro(after.finishedAt)), arg(after.seq)))
	}
	sql := "SELECT " + selectColumns + " FROM delayq_job_history"
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += " ORDER BY finished_at DESC, seq DESC LIMIT " + arg(limit+1)
	return sql, args
}

// Query returns a page of the outcomes f selects, newest first. Pages follow each other by
// position, not by offset: rows added meanwhile neither repeat nor shift a row of the later
// pages; a row added behind the cursor (one that finished earlier) appears in them. An invalid
// filter or cursor is a *FilterError.
func (s *Store) Query(ctx context.Context, f Filter) (Page, error) {
	limit, after, err := f.validate()
	if err != nil {
		return Page{}, err
	}
	sql, args := querySQL(f, limit, after)
	var page Page
	err = s.withConn(ctx, func(conn *pgxpool.Conn) error {
		page, err = readPage(ctx, conn, sql, args, limit)
		return err
	})
	if err != nil {
		return Page{}, fmt.Errorf("archive: query: %w", err)
	}
	return page, nil
}

// readPage runs a statement of querySQL and reads its page of limit rows.
func readPage(ctx context.Context, conn *pgxpool.Conn, sql string, args []any, limit int) (Page, error) {
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return Page{}, err
	}
	defer rows.Close()
	page := Page{Outcomes: make([]Outcome, 0, limit)}
	var last cursor
	for rows.Next() {
		if len(page.Outcomes) == limit { // the extra row: there is a next page
			page.Next = last.String()
			break
		}
		o, seq, err := scanOutcome(rows)
		if err != nil {
			return Page{}, err
		}
		page.Outcomes = append(page.Outcomes, o)
		last = cursor{finishedAt: o.FinishedAt.UnixMicro(), seq: seq}
	}
	rows.Close()
	return page, rows.Err()
}

// scanOutcome reads a row of selectColumns.
func scanOutcome(rows pgx.Rows) (Outcome, int64, error) {
	var (
		o        Outcome
		seq      int64
		attempts int32
		format   int32
		priority int32
		retries  int32
		ttrMs    int64
		headers  []byte
		bpri     *int64
		snoozes  int32
		most     int32
	)
	err := rows.Scan(&seq, &o.Topic, &o.ID, &o.Outcome, &attempts, &o.Body, &format, &priority,
		&retries, &ttrMs, &o.CreatedAt, &o.RunAt, &o.FinishedAt, &o.LastError, &o.CallbackURL, &headers, &bpri,
		&snoozes, &most)
	if err != nil {
		return Outcome{}, 0, err
	}
	o.Snoozes, o.MaxSnoozes = int(snoozes), int(most)
	o.Attempts, o.Format, o.Priority, o.MaxRetries = int(attempts), int(format), int(priority), int(retries)
	o.TTR = time.Duration(ttrMs) * time.Millisecond
	if bpri != nil {
		pri := uint32(*bpri) // within range: the column's check
		o.BeanstalkdPriority = &pri
	}
	if headers != nil {
		if err := json.Unmarshal(headers, &o.Headers); err != nil {
			return Outcome{}, 0, fmt.Errorf("headers of %s/%s: %w", o.Topic, o.ID, err)
		}
	}
	return o, seq, nil
}
