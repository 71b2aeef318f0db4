//go:build unix

package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrLocked is matched by the error of Start when another process uses the data directory.
var ErrLocked = errors.New("data directory in use")

// lockWait is how long lockDir waits for a holder that is about to let go: for moments after a
// server has stopped, a process forked meanwhile may still hold a copy of the open file — a
// redis-server's background child (an AOF rewrite) that outlives it briefly, or a child another
// goroutine of this process forked and has not yet exec'd.
const lockWait = 2 * time.Second

// flockWaiting takes an exclusive flock on f, trying again for lockWait while it is held.
func flockWaiting(f *os.File) error {
	deadline := time.Now().Add(lockWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockDir takes an exclusive lock on the file delayq.lock in dir, so that two servers never
// run a redis-server on the same AOF. The lock belongs to the open file, which launch passes
// on to each redis-server: it lasts until this process and every redis-server started with it
// have closed the file or ended, so a redis-server left running by a delayq that died keeps
// the directory locked until it exits.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, "delayq.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded redis: opening the lock file: %w", err)
	}
	if err := flockWaiting(f); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("embedded redis: %w: %s is used by another delayq server (pid %s) or by a redis-server it started that has not exited yet; give each server its own --data-dir",
				ErrLocked, dir, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("embedded redis: locking %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
