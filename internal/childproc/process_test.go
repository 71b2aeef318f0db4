//go:build unix

package childproc

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func startOnFreePort(t *testing.T, extra ...string) (*Process, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return startOn(t, port, t.TempDir(), extra...)
}

// startOn starts redis-server on port with its files in dir and kills it when the test ends.
func startOn(t *testing.T, port int, dir string, extra ...string) (*Process, string) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "out.log"))
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--dir", dir}, extra...)
	p, err := Start(Options{Bin: bin, Args: args, Output: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill(10 * time.Second) })
	return p, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

func TestStartWaitTerminate(t *testing.T) {
	p, addr := startOnFreePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitReady(ctx, 10*time.Millisecond, Accepts(addr)); err != nil {
		t.Fatal(err)
	}
	if err := p.Terminate(ctx, 10*time.Second); err != nil {
		t.Fatalf("Terminate: %v", err)
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("Terminate returned before the process exited")
	}
}

// Accepts holds while something listens on the address, and not once it has stopped.
func TestAccepts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx := context.Background()
	if err := Accepts(addr)(ctx); err != nil {
		t.Errorf("Accepts(%s) while listening: %v", addr, err)
	}
	ln.Close()
	if err := Accepts(addr)(ctx); err == nil {
		t.Errorf("Accepts(%s) after the listener closed: nil, want an error", addr)
	}
}

// A process that exits during start-up ends the wait at once with ErrExited.
func TestWaitReadyNoticesTheExit(t *testing.T) {
	p, _ := startOnFreePort(t, "--no-such-option", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := p.WaitReady(ctx, 10*time.Millisecond, func(context.Context) error { return errors.New("not yet") })
	if !errors.Is(err, ErrExited) {
		t.Fatalf("WaitReady: %v, want ErrExited", err)
	}
}

func TestStartOfAMissingBinary(t *testing.T) {
	if _, err := Start(Options{Bin: filepath.Join(t.TempDir(), "redis-server")}); err == nil {
		t.Fatal("Start of a missing binary succeeded")
	}
}

// Poll ends with the last error of ready once ctx ends, and with nil once ready holds.
func TestPoll(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	notYet := errors.New("not yet")
	err := Poll(ctx, time.Millisecond, func(context.Context) error { return notYet })
	if !errors.Is(err, notYet) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Poll: %v, want the last error and the deadline", err)
	}
	calls := 0
	err = Poll(context.Background(), time.Millisecond, func(context.Context) error {
		if calls++; calls < 3 {
			return notYet
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Poll: %v after %d calls, want nil after 3", err, calls)
	}
}

func TestLogTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "redis.log")
	var lines []string
	for i := range 20_000 { // more than LogTail reads
		lines = append(lines, "line "+strconv.Itoa(i))
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := LogTail(path, 3), "line 19997\nline 19998\nline 19999"; got != want {
		t.Errorf("LogTail = %q, want %q", got, want)
	}
	if got := LogTail(filepath.Join(t.TempDir(), "none.log"), 3); !strings.HasPrefix(got, "(no log: ") {
		t.Errorf("LogTail of a missing file = %q", got)
	}
}
