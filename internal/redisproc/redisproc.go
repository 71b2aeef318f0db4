//go:build unix

// Package redisproc starts and ends redis-server child processes — the embedded server of
// `delayq server`, the servers the tests start and those the benchmarks start — and waits for
// them to become ready. Unix only, as redis-server.
package redisproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Binary returns the path of redis-server on PATH, or an error that says how to install it.
func Binary() (string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("redis-server not found on PATH (Debian: apt-get install redis-server): %w", err)
	}
	return bin, nil
}

// Options describe a redis-server process.
type Options struct {
	Bin  string   // the redis-server binary
	Args []string // its command line
	Dir  string   // its working directory; empty: the current one
	Env  []string // its environment; nil: this process's
	// Output receives the process's stdout and stderr and is closed once it has exited.
	Output io.WriteCloser
	// ExtraFiles are inherited by the process (as in exec.Cmd).
	ExtraFiles []*os.File
	// DeathSignal is the signal the kernel sends the process should this one die without
	// stopping it (Linux only; 0: none).
	DeathSignal syscall.Signal
	// OwnGroup puts the process in a process group of its own, so that a Ctrl-C in a terminal
	// reaches only this process, which can then stop redis-server last.
	OwnGroup bool
}

// Process is a running (or exited) redis-server.
type Process struct {
	cmd     *exec.Cmd
	started time.Time
	exited  chan struct{} // closed once the process has exited and been reaped
	err     error         // its exit status, once exited is closed
}

// Start starts the process. It forks from a goroutine that keeps its OS thread until the child
// has been reaped: on Linux the parent-death signal fires when the thread that forked the child
// ends, not the process (go.dev/issue/27505), and Go ends a thread whenever a goroutine locked
// to it returns without unlocking; a thread that no other goroutine can run on cannot be ended
// that way.
func Start(o Options) (*Process, error) {
	cmd := exec.Command(o.Bin, o.Args...)
	cmd.Dir = o.Dir
	cmd.Env = o.Env
	if o.Output != nil {
		cmd.Stdout, cmd.Stderr = o.Output, o.Output
	}
	cmd.ExtraFiles = o.ExtraFiles
	setProcAttr(cmd, o.DeathSignal, o.OwnGroup)
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread() // only once the child has been reaped
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.started = time.Now()
		started <- nil
		p.err = cmd.Wait()
		if o.Output != nil {
			o.Output.Close()
		}
		close(p.exited)
	}()
	if err := <-started; err != nil {
		if o.Output != nil {
			o.Output.Close()
		}
		return nil, fmt.Errorf("starting %s: %w", o.Bin, err)
	}
	return p, nil
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Started returns when the process started.
func (p *Process) Started() time.Time { return p.started }

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitErr returns the exit status once Exited is closed (nil for a clean exit).
func (p *Process) ExitErr() error {
	<-p.exited
	return p.err
}

// Signal sends sig unless the process has exited.
func (p *Process) Signal(sig os.Signal) {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(sig)
	}
}

// Kill sends SIGKILL (and SIGCONT, should the process be stopped) and waits up to timeout for
// the exit.
func (p *Process) Kill(timeout time.Duration) error {
	p.Signal(syscall.SIGKILL)
	p.Signal(syscall.SIGCONT)
	select {
	case <-p.exited:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("redis-server pid %d did not exit %v after SIGKILL", p.Pid(), timeout)
	}
}

// Terminate sends SIGTERM (a clean shutdown that flushes the AOF) and waits for the exit; once
// grace has passed or ctx has ended it sends SIGKILL, and then reports an error.
func (p *Process) Terminate(ctx context.Context, grace time.Duration) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	p.Signal(syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.exited:
		return nil
	case <-timer.C:
	case <-ctx.Done():
	}
	p.Signal(syscall.SIGKILL)
	<-p.exited
	return fmt.Errorf("redis-server (pid %d) did not exit after SIGTERM and was killed", p.Pid())
}

// ErrExited is matched by the error of WaitReady when the process exited first.
var ErrExited = errors.New("redis-server exited during start-up")

// WaitReady calls ready every interval until it returns nil, the process exits (ErrExited,
// with its exit status), or ctx ends (the last error of ready, or ctx's).
func (p *Process) WaitReady(ctx context.Context, interval time.Duration, ready func(context.Context) error) error {
	exited, err := poll(ctx, interval, p.exited, ready)
	switch {
	case exited:
		return fmt.Errorf("%w (%v)", ErrExited, p.err)
	case err != nil:
		return fmt.Errorf("redis-server (pid %d) not ready: %w", p.Pid(), err)
	}
	return nil
}

// Poll calls ready every interval until it returns nil or ctx ends; then it returns the last
// error of ready joined with ctx's. It waits for what no single process stands for, such as a
// cluster's nodes agreeing.
func Poll(ctx context.Context, interval time.Duration, ready func(context.Context) error) error {
	_, err := poll(ctx, interval, nil, ready)
	return err
}

// poll is Poll that also gives up, reporting true, once stop is closed.
func poll(ctx context.Context, interval time.Duration, stop <-chan struct{}, ready func(context.Context) error) (bool, error) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return true, nil
		default:
		}
		last := ready(ctx)
		if last == nil {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, errors.Join(last, ctx.Err())
		case <-stop:
		case <-tick.C:
		}
	}
}

// PingReady returns a ready function for WaitReady that holds once rdb answers PING, each
// try bounded to a second. A server still reading its data answers LOADING, an error.
func PingReady(rdb redis.Cmdable) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return rdb.Ping(ctx).Err()
	}
}

// LogTail returns the last n lines of the file at path, for error messages.
func LogTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	const maxRead = 8 << 10
	if st, err := f.Stat(); err == nil && st.Size() > maxRead {
		_, _ = f.Seek(st.Size()-maxRead, 0)
	}
	buf := make([]byte, maxRead)
	k, _ := io.ReadFull(f, buf)
	lines := strings.Split(strings.TrimRight(string(buf[:k]), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
