package embedded

import (
	"time"

	"github.com/delayq/delayq/internal/childproc"
)

// stableUptime is how long a server must run before a crash counts as a fresh one, whose
// restart waits only MinBackoff again.
const stableUptime = 30 * time.Second

// supervise waits for the running server to exit and, unless Stop was called, starts it again
// on the same directory, waiting longer after each restart that fails or dies quickly.
func (r *Redis) supervise(p *childproc.Process) {
	defer close(r.done)
	backoff := r.cfg.MinBackoff
	for {
		select {
		case <-r.stopCtx.Done():
			return
		case <-p.Exited():
		}
		if time.Since(p.Started()) > stableUptime {
			backoff = r.cfg.MinBackoff
		}
		r.log.Error("embedded redis-server exited unexpectedly; restarting it",
			"pid", p.Pid(), "status", p.ExitErr(), "uptime", time.Since(p.Started()).Round(time.Millisecond),
			"log", childproc.LogTail(r.logPath(), 5), "retry_in", backoff)
		r.mu.Lock()
		r.proc = nil
		r.mu.Unlock()
		for {
			if !r.sleep(backoff) {
				return
			}
			backoff = min(2*backoff, r.cfg.MaxBackoff)
			next, err := r.launch(r.stopCtx)
			if err == nil {
				p = next
				break
			}
			if r.stopCtx.Err() != nil {
				return
			}
			r.log.Error("embedded redis-server failed to restart", "err", err, "retry_in", backoff)
		}
		r.mu.Lock()
		r.proc = p
		r.restarts++
		r.mu.Unlock()
		r.log.Info("embedded redis-server restarted", "pid", p.Pid(), "socket", r.socket)
	}
}

// sleep waits d, and reports false if Stop was called meanwhile.
func (r *Redis) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.stopCtx.Done():
		return false
	}
}
