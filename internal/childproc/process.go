//go:build unix

// Package childproc starts and ends the server processes delayq runs as children — the embedded
// redis-server of `delayq server`, and the redis-server, PostgreSQL and beanstalkd servers the
// tests and benchmarks start — on loopback ports it reserves, and waits for them to become
// ready. Each ends when it is stopped by its pid, or with this process (Linux). Unix only.
package childproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Options describe a child process.
type Options struct {
	Bin  string   // the binary
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
	// reaches only this process, which can then stop the child last.
	OwnGroup bool
	// Credential runs the process as another user (nil: this process's). On Linux the death
	// signal still holds: Go sets it after switching credentials.
	Credential *syscall.Credential
}

// Process is a running (or exited) child process.
type Process struct {
	name    string // the binary's base name, for messages
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
	setProcAttr(cmd, o.DeathSignal, o.OwnGroup, o.Credential)
	p := &Process{name: filepath.Base(o.Bin), cmd: cmd, exited: make(chan struct{})}
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
		return fmt.Errorf("%s (pid %d) did not exit %v after SIGKILL", p.name, p.Pid(), timeout)
	}
}

// Terminate sends SIGTERM (a clean shutdown: redis-server flushes its AOF) and waits for the
// exit; once grace has passed or ctx has ended it sends SIGKILL, and then reports an error.
func (p *Process) Terminate(ctx context.Context, grace time.Duration) error {
	return p.stop(ctx, syscall.SIGTERM, grace)
}

// Stop sends sig and waits for the exit; once grace has passed it sends SIGKILL, and then
// reports an error.
func (p *Process) Stop(sig syscall.Signal, grace time.Duration) error {
	return p.stop(context.Background(), sig, grace)
}

func (p *Process) stop(ctx context.Context, sig syscall.Signal, grace time.Duration) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	p.Signal(sig)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.exited:
		return nil
	case <-timer.C:
	case <-ctx.Done():
	}
	p.Signal(syscall.SIGKILL)
	p.Signal(syscall.SIGCONT)
	<-p.exited
	return fmt.Errorf("%s (pid %d) did not exit after %v and was killed", p.name, p.Pid(), sig)
}

// ErrExited is matched by the error of WaitReady when the process exited first.
var ErrExited = errors.New("the process exited during start-up")

// WaitReady calls ready every interval until it returns nil, the process exits (ErrExited,
// with its exit status), or ctx ends (the last error of ready, or ctx's).
func (p *Process) WaitReady(ctx context.Context, interval time.Duration, ready func(context.Context) error) error {
	exited, err := poll(ctx, interval, p.exited, ready)
	switch {
	case exited:
		return fmt.Errorf("%w (%v)", ErrExited, p.err)
	case err != nil:
		return fmt.Errorf("%s (pid %d) not ready: %w", p.name, p.Pid(), err)
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

// Accepts returns a ready function, for WaitReady and Poll, that holds once addr accepts a TCP
// connection; it closes the connection at once. Each try waits at most a second.
func Accepts(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
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
