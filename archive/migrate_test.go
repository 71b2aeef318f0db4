package archive

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// schemaVersions returns the versions recorded in the database at url.
func schemaVersions(t *testing.T, url string) []int32 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT version FROM delayq_archive_schema ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// wantVersions returns the versions of the embedded migrations.
func wantVersions(t *testing.T) []int32 {
	t.Helper()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	var vs []int32
	for i, m := range ms {
		if m.version != i+1 {
			t.Fatalf("migration %s: version %d, want %d: versions run 1, 2, 3, ...", m.name, m.version, i+1)
		}
		vs = append(vs, int32(m.version))
	}
	return vs
}

// TestOpenTwice opens a database that is already migrated and holds rows: nothing is applied
// twice and the rows stay.
func TestOpenTwice(t *testing.T) {
	t.Parallel()
	s, url := openStore(t, Options{})
	insert(t, s, outcomes("t", 3))
	again, err := Open(context.Background(), url, Options{})
	if err != nil {
		t.Fatalf("second Open: %v", err)
	}
	defer again.Close()
	if got, want := schemaVersions(t, url), wantVersions(t); !slices.Equal(got, want) {
		t.Errorf("schema versions %v, want %v", got, want)
	}
	page, err := again.Query(context.Background(), Filter{})
	if err != nil || len(page.Outcomes) != 3 {
		t.Fatalf("after a second Open: %d outcomes, err %v; want 3", len(page.Outcomes), err)
	}
}

// TestOpenConcurrently opens a new database from several stores at once, as servers starting
// together do: without the lock, two of them create the same tables and one fails.
func TestOpenConcurrently(t *testing.T) {
	t.Parallel()
	url := server.NewDatabase(t)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			s, err := Open(context.Background(), url, Options{MaxConns: 1})
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
	if got, want := schemaVersions(t, url), wantVersions(t); !slices.Equal(got, want) {
		t.Errorf("schema versions %v, want %v", got, want)
	}
}

// TestOpenFailedMigration checks that a migration that fails leaves no version recorded and
// no half-made schema: here a table of the same name is in the way.
func TestOpenFailedMigration(t *testing.T) {
	t.Parallel()
	url := server.NewDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE delayq_job_history (x int)"); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(ctx, url, Options{}); err == nil {
		s.Close()
		t.Fatal("Open succeeded over a conflicting table")
	}
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('delayq_archive_schema') IS NOT NULL").Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Error("the schema version table was created by a migration that failed")
	}
}

// TestOpenInvalid checks that Open refuses options out of range and URLs it cannot read, and
// fails, rather than waiting, when nothing listens at the URL.
func TestOpenInvalid(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		url  string
		opts Options
	}{
		{"negative MaxConns", server.URL(), Options{MaxConns: -1}},
		{"malformed URL", "postgres://%zz", Options{}},
		{"nothing listening", "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=5", Options{}},
	} {
		if s, err := Open(ctx, tc.url, tc.opts); err == nil {
			s.Close()
			t.Errorf("%s: Open succeeded", tc.name)
		}
	}
}

// TestOpenUpgradesTheSchemaBeforeBeanstalkdPriorities opens a database made by a delayq whose
// history had no beanstalkd priorities (versions 1 and 2), with rows in it: Open upgrades it in
// place, the rows read back as before, and the ends of beanstalkd jobs are stored from then on.
func TestOpenUpgradesTheSchemaBeforeBeanstalkdPriorities(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := server.NewDatabase(t)
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	old, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	err = apply(ctx, old, ms[:2])
	old.Close()
	if err != nil {
		t.Fatalf("applying versions 1 and 2: %v", err)
	}
	// A row as the previous version wrote it.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	before := outcome("orders", "o-1", 0)
	if _, err := conn.Exec(ctx, `INSERT INTO delayq_job_history (topic, id, outcome, attempts,
		format, priority, max_retries, ttr_ms, created_at, run_at, finished_at, last_error,
		callback_url, headers, entry) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
		$13, $14, 'old-entry')`, before.Topic, before.ID, before.Outcome, before.Attempts,
		before.Format, before.Priority, before.MaxRetries, before.TTR.Milliseconds(),
		before.CreatedAt, before.RunAt, before.FinishedAt, before.LastError, before.CallbackURL,
		before.Headers); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, url, Options{KeepBodies: true})
	if err != nil {
		t.Fatalf("Open over the previous schema: %v", err)
	}
	defer s.Close()
	if got, want := schemaVersions(t, url), wantVersions(t); !slices.Equal(got, want) {
		t.Errorf("schema versions %v, want %v", got, want)
	}
	pri := uint32(1<<32 - 1)
	after := outcome("tube", "00000000000000000042", 1)
	after.Priority, after.BeanstalkdPriority = 0, &pri
	insert(t, s, []Outcome{after})

	page, err := s.Query(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	before.Body = nil // not written by the previous version's row above
	if diff := cmp.Diff([]Outcome{after, before}, page.Outcomes, equalTimes, equalBytes); diff != "" {
		t.Errorf("outcomes after the upgrade (-want +got):\n%s", diff)
	}
	// The column takes beanstalkd's range only.
	if _, err := conn.Exec(ctx, `UPDATE delayq_job_history SET beanstalkd_priority = 4294967296`); err == nil {
		t.Error("a beanstalkd priority of 2^32 was stored")
	}
}
