package delayqtest

import (
	"context"
	"log/slog"
	"os/exec"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/redistest"
)

// NewRedis starts a redis-server of the test's own on a free loopback port and returns a client
// of it. The server keeps nothing on disk and is killed, and the client closed, when the test
// ends; its address is NewRedis(t).Options().Addr. When redis-server is not on PATH the test
// fails, saying how to install it: a test that cannot run must not pass.
func NewRedis(t testing.TB) *redis.Client {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("delayqtest: redis-server is not on PATH, and the test needs one to start: " +
			"install Redis (Debian and Ubuntu: apt-get install redis-server; macOS: brew install redis)")
	}
	return redistest.Standalone(t).Client(t)
}

// NewClient returns a delayq Client on a redis-server of its own (NewRedis), closed when the
// test ends. cfg's zero fields take delayq's defaults, except Logger, which defaults to
// discarding: the throwaway server keeps no AOF or RDB, which a Client would warn about.
// To share one server between Clients, or with the code under test, start it with NewRedis
// and call delayq.New on it.
func NewClient(t testing.TB, cfg delayq.Config) *delayq.Client {
	t.Helper()
	return newClientOn(t, NewRedis(t), cfg)
}

// newClientOn returns a Client on rdb, closed when the test ends.
func newClientOn(t testing.TB, rdb redis.UniversalClient, cfg delayq.Config) *delayq.Client {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := delayq.New(context.Background(), rdb, cfg)
	if err != nil {
		t.Fatalf("delayqtest: delayq.New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
