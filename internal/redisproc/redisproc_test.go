//go:build unix

package redisproc

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func startOnFreePort(t *testing.T, extra ...string) (*Process, string) {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
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

func dialable(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	}
}

func TestStartWaitTerminate(t *testing.T) {
	p, addr := startOnFreePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitReady(ctx, 10*time.Millisecond, dialable(addr)); err != nil {
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
