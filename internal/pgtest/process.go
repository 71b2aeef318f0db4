//go:build unix

package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// process is a running (or exited) postgres server process started by this package.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has exited and been reaped
	err    error         // its exit status, once exited is closed
}

// startProcess starts bin with args as the user of cred (nil: this process's user), its
// output appended to out. Should the test binary die without stopping it, the kernel kills it
// (Linux): the fork happens on a goroutine that keeps its OS thread until the child is reaped,
// because the parent-death signal fires when the forking thread ends, not the process
// (go.dev/issue/27505). Go sets the signal after switching credentials, which would clear it.
func startProcess(bin string, args []string, cred *syscall.Credential, dir string, out *os.File) (*process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = procAttr(cred)
	p := &process{cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread() // only once the child has been reaped
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	return p, nil
}

// pid returns the process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// signal sends sig unless the process has exited.
func (p *process) signal(sig os.Signal) {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(sig)
	}
}

// stop sends sig and waits for the exit; once grace has passed it sends SIGKILL, waits again
// and reports that it had to.
func (p *process) stop(sig syscall.Signal, grace time.Duration) error {
	p.signal(sig)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.exited:
		return nil
	case <-timer.C:
	}
	p.signal(syscall.SIGKILL)
	select {
	case <-p.exited:
		return fmt.Errorf("postgres (pid %d) ignored %v for %v and was killed", p.pid(), sig, grace)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("postgres (pid %d) did not exit after SIGKILL", p.pid())
	}
}
