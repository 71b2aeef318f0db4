package delayq

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redistest"
)

// newTestClient returns a Client on a redis-server of its own.
func newTestClient(t testing.TB, cfg Config) (*Client, redis.UniversalClient) {
	t.Helper()
	rdb := redistest.Standalone(t).Client(t)
	return newClientOn(t, rdb, cfg), rdb
}

func newClientOn(t testing.TB, rdb redis.UniversalClient, cfg Config) *Client {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := New(context.Background(), rdb, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// advance moves the clock every script of c sees forward by d.
func advance(c *Client, d time.Duration) {
	c.store.SetClockOffset(c.store.ClockOffset() + d.Milliseconds())
}

func mustEnqueue(t testing.TB, c *Client, topic string, s Spec) *Job {
	t.Helper()
	j, err := c.Enqueue(testContext(t), topic, s)
	if err != nil {
		t.Fatalf("Enqueue(%q): %v", s.ID, err)
	}
	return j
}

func reserveOne(t testing.TB, c *Client, topic string, wait time.Duration) *Job {
	t.Helper()
	jobs, err := c.Reserve(testContext(t), topic, ReserveOptions{Wait: wait})
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	if len(jobs) != 1 {
		t.Fatalf("Reserve got %d jobs, want 1", len(jobs))
	}
	return jobs[0]
}
