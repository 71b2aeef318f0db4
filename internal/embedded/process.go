package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// process is one run of redis-server.
type process struct {
	cmd     *exec.Cmd
	started time.Time
	exited  chan struct{} // closed when the process has exited and been reaped
	waitErr error         // the exit status, once exited is closed
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// start starts the process from a goroutine that then waits for its exit and closes logFile.
// That goroutine holds its OS thread from before the fork until the child is reaped: on Linux
// the parent-death signal (see setProcAttr) fires when the thread that forked the child ends,
// not the process (go.dev/issue/27505), and Go ends a thread whenever a goroutine locked to it
// returns without unlocking. A thread no other goroutine can run on cannot be ended that way.
func (p *process) start(logFile *os.File) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread() // only once the child has been reaped
		if err := p.cmd.Start(); err != nil {
			started <- err
			return
		}
		p.started = time.Now()
		started <- nil
		p.waitErr = p.cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return <-started
}

// terminate sends SIGTERM and waits for the exit, then sends SIGKILL once grace has passed or
// ctx has ended. It reports an error when SIGKILL was needed.
func (p *process) terminate(ctx context.Context, grace time.Duration) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.exited:
		return nil
	case <-timer.C:
	case <-ctx.Done():
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	return fmt.Errorf("embedded redis: redis-server (pid %d) did not exit after SIGTERM and was killed", p.pid())
}

// args returns the redis-server command line.
func (r *Redis) args() []string {
	args := []string{
		"--port", "0", // no TCP listener: only the unix socket
		"--unixsocket", r.socket,
		"--unixsocketperm", "700",
		"--dir", r.cfg.Dir,
		"--daemonize", "no",
		"--logfile", r.logPath(),
		// AOF is what makes an enqueue durable; RDB snapshots add nothing to it.
		"--appendonly", "yes",
		"--appendfsync", r.cfg.AppendFsync,
		"--save", "",
		// Evicting keys would silently drop jobs.
		"--maxmemory-policy", "noeviction",
	}
	return append(args, r.cfg.Args...)
}

func (r *Redis) logPath() string { return filepath.Join(r.cfg.Dir, "redis.log") }

// launch starts a redis-server and waits until it answers PING. A process that does not
// become ready is killed.
func (r *Redis) launch(ctx context.Context) (*process, error) {
	logFile, err := os.OpenFile(r.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded redis: opening the log file: %w", err)
	}
	cmd := exec.Command(r.bin, r.args()...)
	cmd.Dir = r.cfg.Dir
	// Messages written before the log file is open (a bad argument, say) land in it too.
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// The child shares the open lock file, and with it the lock (see lockDir), so the data
	// directory stays locked until redis-server has exited even if delayq dies first.
	cmd.ExtraFiles = []*os.File{r.lock}
	setProcAttr(cmd)
	p := &process{cmd: cmd, exited: make(chan struct{})}
	if err := p.start(logFile); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("embedded redis: starting %s: %w", r.bin, err)
	}
	if err := r.waitReady(ctx, p); err != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
		return nil, err
	}
	return p, nil
}

// waitReady polls the socket until the server answers PING (it answers LOADING while it reads
// its AOF), the process exits, ctx ends or StartTimeout passes.
func (r *Redis) waitReady(ctx context.Context, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.StartTimeout)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{
		Network: "unix", Addr: r.socket, MaxRetries: -1, PoolSize: 1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	})
	defer rdb.Close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("embedded redis: redis-server exited during start-up (%v); end of %s:\n%s", p.waitErr, r.logPath(), logTail(r.logPath(), 15))
		default:
		}
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		lastErr = rdb.Ping(pctx).Err()
		pcancel()
		if lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("embedded redis: redis-server (pid %d) did not answer within %v: %w; end of %s:\n%s", p.pid(), r.cfg.StartTimeout, lastErr, r.logPath(), logTail(r.logPath(), 15))
			}
			return fmt.Errorf("embedded redis: waiting for redis-server to start: %w", ctx.Err())
		case <-p.exited:
		case <-tick.C:
		}
	}
}

// checkVersion refuses a redis-server older than 7, which lacks the sharded pub/sub delayq uses.
func checkVersion(ctx context.Context, socket string) error {
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: socket, MaxRetries: -1, PoolSize: 1})
	defer rdb.Close()
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("embedded redis: INFO server: %w", err)
	}
	version := infoField(info, "redis_version")
	major, _, _ := strings.Cut(version, ".")
	if n, err := strconv.Atoi(major); err != nil || n < 7 {
		return fmt.Errorf("embedded redis: redis-server %q is too old: delayq needs Redis 7 or newer", version)
	}
	return nil
}

// infoField returns the value of one "name:value" line of an INFO reply.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// logTail returns the last n lines of the file at path, for error messages.
func logTail(path string, n int) string {
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
