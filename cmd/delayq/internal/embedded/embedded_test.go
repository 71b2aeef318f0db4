package embedded_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/embedded"
	"github.com/delayq/delayq/internal/testwait"
)

func TestKillRestartsAndKeepsJobs(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	var logs testwait.Buffer
	r := start(t, embedded.Config{
		Dir:         t.TempDir(),
		AppendFsync: "always", // every acknowledged write is on disk before the kill
		MinBackoff:  10 * time.Millisecond,
		Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
	})
	c := newClient(t, r)
	for _, id := range []string{"a", "b", "c"} {
		if _, err := c.Enqueue(ctx, "orders", delayq.Spec{ID: id, Body: []byte(`{"n":1}`), Format: delayq.FormatJSON, Delay: time.Hour}); err != nil {
			t.Fatalf("Enqueue %s: %v", id, err)
		}
	}
	if _, err := c.Enqueue(ctx, "orders", delayq.Spec{ID: "done"}); err != nil {
		t.Fatal(err)
	}
	jobs, err := c.Reserve(ctx, "orders", delayq.ReserveOptions{Max: 1})
	if err != nil || len(jobs) != 1 || jobs[0].ID != "done" {
		t.Fatalf("Reserve = %v, %v; want job done", jobs, err)
	}
	if err := c.Ack(ctx, delayq.Lease{Topic: "orders", ID: "done", Token: jobs[0].LeaseToken}); err != nil {
		t.Fatal(err)
	}

	old := r.Pid()
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 15*time.Second, "redis-server to be restarted", func() bool { return r.Restarts() == 1 && r.Pid() != 0 && r.Pid() != old })
	if alive(old) {
		t.Errorf("killed redis-server %d still exists", old)
	}

	// The client reconnects to the same socket and finds the jobs.
	testwait.For(t, 10*time.Second, "the job to be readable again", func() bool { _, err := c.Get(ctx, "orders", "a"); return err == nil })
	for _, id := range []string{"a", "b", "c"} {
		j, err := c.Get(ctx, "orders", id)
		if err != nil {
			t.Fatalf("Get %s after the restart: %v", id, err)
		}
		if j.State != delayq.StateDelayed || string(j.Body) != `{"n":1}` {
			t.Errorf("job %s after the restart: state %s body %s", id, j.State, j.Body)
		}
	}
	if _, err := c.Get(ctx, "orders", "done"); !errors.Is(err, delayq.ErrNotFound) {
		t.Errorf("acked job after the restart: err = %v, want ErrNotFound", err)
	}
	if !strings.Contains(logs.String(), "exited unexpectedly") || !strings.Contains(logs.String(), "restarted") {
		t.Errorf("the crash and restart are not logged:\n%s", logs.String())
	}
}

func TestStopAndStartAgainKeepsData(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	dir := t.TempDir()
	r := start(t, embedded.Config{Dir: dir}) // appendfsync everysec: SIGTERM flushes the AOF
	rdb := redis.NewClient(r.Options())
	if err := rdb.Set(ctx, "k", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rdb.Close()
	pid := r.Pid()
	if err := r.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if alive(pid) {
		t.Fatalf("redis-server %d still runs after Stop", pid)
	}
	if r.Pid() != 0 {
		t.Errorf("Pid after Stop = %d, want 0", r.Pid())
	}
	if err := r.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	r2 := start(t, embedded.Config{Dir: dir})
	rdb = redis.NewClient(r2.Options())
	defer rdb.Close()
	if v, err := rdb.Get(ctx, "k").Result(); err != nil || v != "kept" {
		t.Errorf("GET k after the restart = %q, %v", v, err)
	}
	cfg, err := rdb.ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"appendonly": "yes", "appendfsync": "everysec", "maxmemory-policy": "noeviction", "port": "0"} {
		if cfg[k] != v {
			t.Errorf("CONFIG %s = %q, want %q", k, cfg[k], v)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "redis.log")); err != nil {
		t.Errorf("no log file in the data directory: %v", err)
	}
}

func TestDirLocked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start(t, embedded.Config{Dir: dir})
	_, err := embedded.Start(testContext(t), embedded.Config{Dir: dir})
	if !errors.Is(err, embedded.ErrLocked) {
		t.Fatalf("second Start on the same directory: err = %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), "--data-dir") {
		t.Errorf("error %q does not say what to do", err)
	}
}

func TestBinaryNotFound(t *testing.T) {
	t.Parallel()
	for _, bin := range []string{filepath.Join(t.TempDir(), "no-such-redis-server"), "no-such-redis-server-on-path"} {
		_, err := embedded.Start(testContext(t), embedded.Config{Dir: t.TempDir(), Binary: bin})
		var nf *embedded.NotFoundError
		if !errors.As(err, &nf) {
			t.Fatalf("Start with binary %q: err = %v, want a NotFoundError", bin, err)
		}
		if !strings.Contains(err.Error(), "apt-get install -y redis-server") {
			t.Errorf("error %q has no install hint", err)
		}
	}
}

func TestLongDirUsesShortSocketPath(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), strings.Repeat("long-directory-name-", 6))
	r := start(t, embedded.Config{Dir: dir})
	if len(r.Addr()) > 100 || strings.HasPrefix(r.Addr(), dir) {
		t.Errorf("socket %q: want a short path outside %s", r.Addr(), dir)
	}
	rdb := redis.NewClient(r.Options())
	defer rdb.Close()
	if err := rdb.Ping(testContext(t)).Err(); err != nil {
		t.Fatal(err)
	}
	socketDir := filepath.Dir(r.Addr())
	if err := r.Stop(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(socketDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary socket directory %s left behind: %v", socketDir, err)
	}
}

func TestBadArgumentFailsStart(t *testing.T) {
	t.Parallel()
	_, err := embedded.Start(testContext(t), embedded.Config{Dir: t.TempDir(), Args: []string{"--no-such-option", "1"}})
	if err == nil || !strings.Contains(err.Error(), "exited during start-up") || !strings.Contains(err.Error(), "no-such-option") {
		t.Fatalf("err = %v, want a start-up failure quoting the log", err)
	}
}

func TestStopDuringRestartBackoff(t *testing.T) {
	t.Parallel()
	r := start(t, embedded.Config{Dir: t.TempDir(), MinBackoff: time.Hour, MaxBackoff: time.Hour})
	pid := r.Pid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "redis-server to exit", func() bool { return r.Pid() == 0 })
	done := make(chan error, 1)
	go func() { done <- r.Stop(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Stop: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stop hangs while the supervisor waits to restart")
	}
	if r.Restarts() != 0 {
		t.Errorf("Restarts = %d after Stop during the backoff, want 0", r.Restarts())
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  embedded.Config
		want string
	}{
		{"no dir", embedded.Config{}, "data directory is required"},
		{"bad fsync", embedded.Config{Dir: "x", AppendFsync: "sometimes"}, "appendfsync"},
		{"negative timeout", embedded.Config{Dir: "x", StopTimeout: -1}, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := embedded.Start(context.Background(), tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// start starts an embedded Redis that is stopped when the test ends, and checks that no
// redis-server is left behind.
func start(t *testing.T, cfg embedded.Config) *embedded.Redis {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	r, err := embedded.Start(testContext(t), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		pid := r.Pid()
		if err := r.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if pid != 0 && alive(pid) {
			t.Errorf("redis-server %d still runs after Stop", pid)
		}
	})
	return r
}

func newClient(t *testing.T, r *embedded.Redis) *delayq.Client {
	t.Helper()
	rdb := redis.NewClient(r.Options())
	t.Cleanup(func() { _ = rdb.Close() })
	c, err := delayq.New(testContext(t), rdb, delayq.Config{Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// alive reports whether a process with this id exists.
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testWriter sends log output to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
