package delayqtest

import (
	"strings"
	"testing"
)

// TestNewRedisFailsWithoutRedisServer hides redis-server: the test must fail, saying what to
// install, and not pass silently.
func TestNewRedisFailsWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	msg := failures(t, func(tb testing.TB) { NewRedis(tb) })
	if !strings.Contains(msg, "redis-server is not on PATH") || !strings.Contains(msg, "install") {
		t.Errorf("failure = %q, want one that says to install redis-server", msg)
	}
}

func TestNewRedisServes(t *testing.T) {
	t.Parallel()
	rdb := NewRedis(t)
	if err := rdb.Ping(testContext(t)).Err(); err != nil {
		t.Fatalf("PING %s: %v", rdb.Options().Addr, err)
	}
	if addr := rdb.Options().Addr; !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":6379") {
		t.Errorf("Addr = %q, want a free loopback port", addr)
	}
}
