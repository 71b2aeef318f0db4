package archive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/clienthooks"
	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// A dead job that is requeued starts its attempts over: when it dies again, that second death
// is an end of its own and gets a row of its own, as do its failed attempts.
func TestArchiverRecordsADeathAfterRequeue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	pg, _ := openStore(t, Options{})
	runArchiver(t, c, pg, ArchiverConfig{Failed: true})

	if _, err := c.Enqueue(ctx, "orders", delayq.Spec{ID: "o-1", MaxRetries: 1}); err != nil {
		t.Fatal(err)
	}
	var zero time.Duration
	die := func() {
		t.Helper()
		for _, dead := range []bool{false, true} {
			jobs, err := c.Reserve(ctx, "orders", delayq.ReserveOptions{Max: 1})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("Reserve: %d jobs, %v", len(jobs), err)
			}
			if _, err := c.Nack(ctx, jobs[0].Lease(), delayq.NackOptions{Error: "no", Delay: &zero, Dead: dead}); err != nil {
				t.Fatal(err)
			}
		}
	}
	die()
	if n, err := c.RequeueDead(ctx, "orders", []string{"o-1"}); err != nil || n != 1 {
		t.Fatalf("RequeueDead: %d, %v", n, err)
	}
	die()
	rows := waitRows(t, pg, "orders", 4)
	n := map[string]int{}
	for _, r := range rows {
		n[r.Outcome]++
	}
	if n[Dead] != 2 || n[Failed] != 2 {
		t.Errorf("rows by outcome %v, want 2 dead and 2 failed", n)
	}
}

// An entry the archive cannot store (an unknown outcome, written there by anything but
// delayq's scripts) is skipped: the outcomes around it in its partition are archived all the
// same, and the partition is not held up for good.
func TestArchiverSkipsAnUnstorableEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.Standalone(t).Client(t)
	c, err := delayq.New(ctx, rdb, delayq.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	pg, _ := openStore(t, Options{})
	runArchiver(t, c, pg, ArchiverConfig{})

	st := clienthooks.Store(c)
	if _, err := c.Enqueue(ctx, "orders", delayq.Spec{ID: "model"}); err != nil {
		t.Fatal(err)
	}
	topics, err := st.Topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rec string
	var p keys.Partition
	for i := range topics["orders"] {
		p = st.Partition("orders", i)
		if r, err := rdb.HGet(ctx, p.Jobs(), "model").Result(); err == nil {
			rec = r
			break
		}
	}
	if rec == "" {
		t.Fatal("no record of the job")
	}
	now := time.Now().UnixMilli()
	for _, e := range []struct {
		o  string
		at int64
	}{{"bogus", now}, {"dead", 9e18}, {"acked", now}} {
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: p.History(), Values: []any{
			"o", e.o, "i", e.o + "-job", "r", rec, "a", "1", "t", e.at}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Cancel(ctx, "orders", "model"); err != nil {
		t.Fatal(err)
	}
	rows := waitRows(t, pg, "orders", 2)
	if rows[0].ID != "acked-job" || rows[1].ID != "model" {
		t.Errorf("rows %v", labels(rows))
	}
}

// Ends recorded before their topic is deleted (emptied and deleted, or purged) are archived
// all the same, though the topic is no longer registered.
func TestArchiverArchivesTheEndsOfADeletedTopic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	pg, _ := openStore(t, Options{})
	if err := Enable(ctx, c, 1000, false); err != nil {
		t.Fatal(err)
	}
	ackAll(t, c, "emptied", "e", 3)
	if _, err := c.DeleteTopic(ctx, "emptied", delayq.DeleteTopicOptions{}); err != nil {
		t.Fatal(err)
	}
	ackAll(t, c, "purged", "p", 2)
	if _, err := c.Enqueue(ctx, "purged", delayq.Spec{ID: "waiting"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteTopic(ctx, "purged", delayq.DeleteTopicOptions{Purge: true}); err != nil {
		t.Fatal(err)
	}
	a := runArchiver(t, c, pg, ArchiverConfig{})
	waitRows(t, pg, "emptied", 3)
	waitRows(t, pg, "purged", 2)
	testwait.ForNil(t, 10*time.Second, "an empty backlog", func() error {
		b, err := a.Backlog(ctx)
		if err != nil || b.Waiting != 0 {
			return fmt.Errorf("%+v, %v", b, err)
		}
		return nil
	})
}

// Two ends of a job alike in every field but the stream entry they came from (a requeued dead
// job dying again within one millisecond) are two rows; the same entry sent again is one.
func TestInsertTellsEntriesApart(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	a, b := outcome("orders", "o-1", 0), outcome("orders", "o-1", 0)
	a.Entry, b.Entry = "1-0", "1-1"
	insert(t, s, []Outcome{a, b})
	if n, err := s.Insert(context.Background(), []Outcome{a, b}); err != nil || n != 0 {
		t.Errorf("Insert again = %d, %v; want 0 rows added", n, err)
	}
}

// A cursor decoded well but naming an instant PostgreSQL cannot hold is a bad cursor, not a
// failed query.
func TestQueryCursorOutOfRange(t *testing.T) {
	t.Parallel()
	s, _ := openStore(t, Options{})
	insert(t, s, outcomes("t", 3))
	for _, micros := range []int64{math.MaxInt64, math.MinInt64, -1 << 60, 1 << 60} {
		c := cursor{finishedAt: micros, seq: 1}.String()
		_, err := s.Query(context.Background(), Filter{Cursor: c})
		var fe *FilterError
		if !errors.As(err, &fe) || fe.Field != "cursor" {
			t.Errorf("Query with cursor at %d µs = %v, want a cursor FilterError", micros, err)
		}
	}
}
