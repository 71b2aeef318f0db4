package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/childproc"
	"github.com/delayq/delayq/internal/redisproc"
)

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
func (r *Redis) launch(ctx context.Context) (*childproc.Process, error) {
	logFile, err := os.OpenFile(r.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded redis: opening the log file: %w", err)
	}
	p, err := childproc.Start(childproc.Options{
		Bin: r.bin, Args: r.args(), Dir: r.cfg.Dir,
		// Messages written before the log file is open (a bad argument, say) land in it too.
		Output: logFile,
		// The child shares the open lock file, and with it the lock (see lockDir), so the data
		// directory stays locked until redis-server has exited even if delayq dies first.
		ExtraFiles: []*os.File{r.lock},
		// A Ctrl-C in the terminal reaches only delayq, which then stops Redis last; should
		// delayq die without stopping it, SIGTERM makes Redis flush its AOF and exit.
		OwnGroup: true, DeathSignal: syscall.SIGTERM,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded redis: %w", err)
	}
	if err := r.waitReady(ctx, p); err != nil {
		_ = p.Kill(10 * time.Second)
		return nil, err
	}
	return p, nil
}

// waitReady polls the socket until the server answers PING (it answers LOADING while it reads
// its AOF), the process exits, ctx ends or StartTimeout passes.
func (r *Redis) waitReady(ctx context.Context, p *childproc.Process) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.StartTimeout)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{
		Network: "unix", Addr: r.socket, MaxRetries: -1, PoolSize: 1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	})
	defer rdb.Close()
	err := p.WaitReady(ctx, 10*time.Millisecond, redisproc.PingReady(rdb))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, childproc.ErrExited):
		return fmt.Errorf("embedded redis: %w; end of %s:\n%s", err, r.logPath(), childproc.LogTail(r.logPath(), 15))
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("embedded redis: redis-server did not answer within %v: %w; end of %s:\n%s", r.cfg.StartTimeout, err, r.logPath(), childproc.LogTail(r.logPath(), 15))
	default:
		return fmt.Errorf("embedded redis: waiting for redis-server to start: %w", err)
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
