package embedded_test

import (
	"context"
	"errors"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/embedded"
	"github.com/delayq/delayq/internal/testwait"
)

// TestStopHoldsLockUntilRedisExits checks that Stop keeps the data directory locked while a
// redis-server slow to act on its SIGTERM still runs, and frees it once that has exited.
func TestStopHoldsLockUntilRedisExits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := start(t, embedded.Config{Dir: dir, StopTimeout: time.Hour})
	pid := r.Pid()
	// Stopped, redis-server leaves Stop's SIGTERM pending until it is continued.
	if err := suspend(pid); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	stopped := make(chan error, 1)
	go func() { stopped <- r.Stop(context.Background()) }()
	testwait.For(t, 10*time.Second, "SIGTERM to be pending", func() bool { return signalPending(t, pid, syscall.SIGTERM) })

	second, err := embedded.Start(testContext(t), embedded.Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	if err == nil {
		_ = second.Stop(context.Background())
		t.Fatalf("a second embedded Redis started on %s while the stopping redis-server (pid %d) still runs", dir, pid)
	}
	if !errors.Is(err, embedded.ErrLocked) {
		t.Fatalf("Start while the stopping redis-server still runs: err = %v, want ErrLocked", err)
	}
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while redis-server %d still runs", err, pid)
	default:
	}

	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("Stop: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Stop did not return after redis-server was continued")
	}
	if alive(pid) {
		t.Fatalf("redis-server %d still runs after Stop", pid)
	}
	start(t, embedded.Config{Dir: dir})
}
