package archive

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/delayq/delayq/internal/pgtest"
)

// TestInsertAcrossOutage stops PostgreSQL under an open Store: Insert fails, promptly, while it
// is down and works again, on the same Store, once it is back; the batch sent while it was down
// is then stored once.
func TestInsertAcrossOutage(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	ctx := context.Background()
	s, err := Open(ctx, pg.URL(), Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	insert(t, s, outcomes("before", 3))

	pg.Stop(t)
	down := outcomes("during", 3)
	for range 3 { // each of the pool's connections, and a new one, fail
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		start := time.Now()
		n, err := s.Insert(ctx, down)
		cancel()
		if err == nil || n != 0 {
			t.Fatalf("Insert with PostgreSQL down = %d, %v; want an error", n, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Insert with PostgreSQL down took %v to fail", d)
		}
	}

	pg.Start(t)
	insert(t, s, down)
	insert(t, s, outcomes("after", 3))
	if got := queryAll(t, s); len(got) != 9 {
		t.Errorf("%d outcomes stored, want 9: %v", len(got), labels(got))
	}
}

// TestQuickRestart restarts PostgreSQL between two calls, faster than the pool checks idle
// connections: the calls after the restart still work, though every connection the pool held
// is dead.
func TestQuickRestart(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	ctx := context.Background()
	const conns = 4
	s, err := Open(ctx, pg.URL(), Options{MaxConns: conns})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var held []*pgxpool.Conn
	for range conns { // fill the pool
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	for _, c := range held {
		c.Release()
	}

	pg.Stop(t)
	pg.Start(t)
	insert(t, s, outcomes("after", 3))
	if _, err := s.Query(ctx, Filter{}); err != nil {
		t.Errorf("Query after the restart: %v", err)
	}
	if _, err := s.DeleteOlderThan(ctx, time.Hour, 10); err != nil {
		t.Errorf("DeleteOlderThan after the restart: %v", err)
	}
}
