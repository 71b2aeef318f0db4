package embedded_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/embedded"
	"github.com/delayq/delayq/internal/testwait"
)

// TestRedisOutlivesStartingThread checks that redis-server does not get its parent-death
// signal when the OS thread of the goroutine that called Start ends while delayq runs on.
func TestRedisOutlivesStartingThread(t *testing.T) {
	t.Parallel()
	type started struct {
		r   *embedded.Redis
		tid int
		err error
	}
	// Go never ends the main thread. A goroutine that finds itself there keeps it, so that
	// the one it starts instead runs on another thread.
	ch := make(chan started, 1)
	mainFree := make(chan struct{})
	var try func()
	try = func() {
		runtime.LockOSThread()
		if syscall.Gettid() == os.Getpid() {
			go try()
			<-mainFree
			runtime.UnlockOSThread()
			return
		}
		// Never unlocked: Go ends this thread when the goroutine returns.
		r, err := embedded.Start(testContext(t), embedded.Config{Dir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
		if err == nil {
			// Stopped before its parent thread can end, redis-server keeps a signal that
			// ending sends pending where the test can see it.
			err = suspend(r.Pid())
		}
		ch <- started{r, syscall.Gettid(), err}
	}
	go try()
	got := <-ch
	close(mainFree)
	if got.r != nil {
		pid := got.r.Pid()
		t.Cleanup(func() {
			_ = syscall.Kill(pid, syscall.SIGCONT)
			if err := got.r.Stop(context.Background()); err != nil {
				t.Errorf("Stop: %v", err)
			}
		})
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	r := got.r
	pid := r.Pid()
	task := fmt.Sprintf("/proc/%d/task/%d", os.Getpid(), got.tid)
	testwait.For(t, 10*time.Second, "the thread that called Start to end", func() bool {
		_, err := os.Stat(task)
		return errors.Is(err, os.ErrNotExist)
	})
	if signalPending(t, pid, syscall.SIGTERM) {
		t.Errorf("redis-server %d got SIGTERM when the thread that called Start ended", pid)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if r.Pid() != pid || r.Restarts() != 0 {
		t.Errorf("redis-server %d was replaced by %d after %d restarts", pid, r.Pid(), r.Restarts())
	}
}

// signalPending reports whether sig is pending for process pid, sent to it or to one of its
// threads.
func signalPending(t *testing.T, pid int, sig syscall.Signal) bool {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		name, mask, ok := strings.Cut(line, ":")
		if !ok || (name != "SigPnd" && name != "ShdPnd") {
			continue
		}
		bits, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
		if err != nil {
			t.Fatalf("%s line %q: %v", name, line, err)
		}
		if bits&(1<<(sig-1)) != 0 {
			return true
		}
	}
	return false
}

// suspend stops process pid with SIGSTOP and waits until it has stopped, after which every
// signal but SIGKILL and SIGCONT stays pending until it is continued.
func suspend(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return err
	}
	path := fmt.Sprintf("/proc/%d/stat", pid)
	return testwait.Until(10*time.Second, func() error {
		stat, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		// The state follows the command name, which is in parentheses and may hold any byte.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'T' {
			return nil
		}
		return fmt.Errorf("process %d did not stop after SIGSTOP", pid)
	})
}
