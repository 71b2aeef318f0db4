// Package embedded runs a redis-server child process for delayq server when no Redis URL is
// given: it listens on a unix socket only, keeps its data in an append-only file in a data
// directory, is restarted by a supervisor if it dies, and is stopped with the server.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/childproc"
)

// Config configures an embedded redis-server. Zero fields take the defaults.
type Config struct {
	// Dir is the data directory: the AOF, the log file redis.log, the lock file and (when its
	// path is short enough) the unix socket live here. It is created if missing. Required.
	Dir string
	// Binary is the redis-server executable, a path or a name looked up on PATH.
	// Defaults to "redis-server".
	Binary string
	// AppendFsync is Redis's appendfsync policy: "everysec", "always" or "no".
	// Defaults to "everysec": a crash of the machine (not of redis-server alone) may lose up to
	// a second of writes; "always" loses none at a cost in write throughput.
	AppendFsync string
	// Args are extra redis-server arguments, appended last so that they override the defaults.
	Args []string
	// StartTimeout bounds how long a start waits for the server to answer PING, loading of the
	// AOF included. Defaults to 60s.
	StartTimeout time.Duration
	// StopTimeout is how long Stop waits after SIGTERM before it sends SIGKILL. Defaults to 10s.
	StopTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before each restart of a server that died; the
	// wait doubles after each failed restart. Default to 100ms and 10s.
	MinBackoff, MaxBackoff time.Duration
	// Logger receives start, crash and restart events. Defaults to slog.Default().
	Logger *slog.Logger
}

// maxSocketPath keeps the socket path within the kernel's limit (108 bytes with the NUL on
// Linux, 104 on the BSDs).
const maxSocketPath = 100

func (c *Config) validate() error {
	if c.Dir == "" {
		return errors.New("embedded redis: a data directory is required")
	}
	if c.Binary == "" {
		c.Binary = "redis-server"
	}
	switch c.AppendFsync {
	case "":
		c.AppendFsync = "everysec"
	case "everysec", "always", "no":
	default:
		return fmt.Errorf("embedded redis: appendfsync %q: want everysec, always or no", c.AppendFsync)
	}
	setDefault := func(d *time.Duration, v time.Duration, name string) error {
		if *d == 0 {
			*d = v
		}
		if *d < 0 {
			return fmt.Errorf("embedded redis: %s must not be negative", name)
		}
		return nil
	}
	return errors.Join(
		setDefault(&c.StartTimeout, 60*time.Second, "start timeout"),
		setDefault(&c.StopTimeout, 10*time.Second, "stop timeout"),
		setDefault(&c.MinBackoff, 100*time.Millisecond, "min backoff"),
		setDefault(&c.MaxBackoff, 10*time.Second, "max backoff"),
	)
}

// NotFoundError reports that the redis-server executable could not be found.
type NotFoundError struct {
	Binary string // the name or path looked for
	Err    error  // why the lookup failed
}

// Error says what was looked for and how to install it.
func (e *NotFoundError) Error() string {
	return fmt.Sprintf("redis-server not found (%v): install it (Debian/Ubuntu: sudo apt-get install -y redis-server)", e.Err)
}

// Unwrap returns the cause.
func (e *NotFoundError) Unwrap() error { return e.Err }

// Redis is a supervised redis-server child process.
type Redis struct {
	cfg    Config
	log    *slog.Logger
	bin    string
	socket string
	tmpDir string // a short directory for the socket when Dir's path is too long, else ""
	lock   *os.File

	stopCtx context.Context // ended by Stop: the supervisor stops restarting
	cancel  context.CancelFunc
	done    chan struct{} // closed when the supervisor has returned

	mu       sync.Mutex
	proc     *childproc.Process
	restarts int

	stopOnce sync.Once
	stopErr  error
}

// Start starts redis-server in cfg.Dir and waits until it answers PING. While the returned
// Redis runs, a supervisor restarts the server (on the same directory, so with the same data)
// whenever it dies. Stop ends it. Only one Redis at a time may use a directory.
func Start(ctx context.Context, cfg Config) (*Redis, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	bin, err := exec.LookPath(cfg.Binary)
	if err != nil {
		return nil, &NotFoundError{Binary: cfg.Binary, Err: err}
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("embedded redis: data directory %q: %w", cfg.Dir, err)
	}
	cfg.Dir = dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded redis: creating the data directory: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	r := &Redis{cfg: cfg, log: cfg.Logger, bin: bin, lock: lock, done: make(chan struct{})}
	r.stopCtx, r.cancel = context.WithCancel(context.Background())
	if err := r.chooseSocket(); err != nil {
		r.release()
		return nil, err
	}
	p, err := r.launch(ctx)
	if err != nil {
		r.release()
		return nil, err
	}
	if err := checkVersion(ctx, r.socket); err != nil {
		_ = p.Terminate(ctx, r.cfg.StopTimeout)
		r.release()
		return nil, err
	}
	r.proc = p
	r.log.Info("embedded redis-server started", "pid", p.Pid(), "socket", r.socket, "dir", dir, "appendfsync", cfg.AppendFsync)
	go r.supervise(p)
	return r, nil
}

// chooseSocket puts the socket in the data directory, or in a new short temporary directory
// when that path would be too long for a unix socket.
func (r *Redis) chooseSocket() error {
	r.socket = filepath.Join(r.cfg.Dir, "redis.sock")
	if len(r.socket) <= maxSocketPath {
		return nil
	}
	tmp, err := os.MkdirTemp("", "delayq-")
	if err != nil {
		return fmt.Errorf("embedded redis: creating a directory for the socket: %w", err)
	}
	r.tmpDir = tmp
	r.socket = filepath.Join(tmp, "redis.sock")
	if len(r.socket) > maxSocketPath {
		return fmt.Errorf("embedded redis: socket path %q is longer than %d bytes even in the temporary directory; set TMPDIR to a shorter path", r.socket, maxSocketPath)
	}
	return nil
}

// Network returns "unix".
func (r *Redis) Network() string { return "unix" }

// Addr returns the path of the server's unix socket.
func (r *Redis) Addr() string { return r.socket }

// Options returns go-redis options that reach the server.
func (r *Redis) Options() *redis.Options {
	return &redis.Options{Network: r.Network(), Addr: r.Addr(), ContextTimeoutEnabled: true}
}

// Dir returns the absolute path of the data directory.
func (r *Redis) Dir() string { return r.cfg.Dir }

// Pid returns the process id of the running redis-server, or 0 while none runs.
func (r *Redis) Pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return 0
	}
	return r.proc.Pid()
}

// Restarts returns how many times the supervisor has restarted the server after it died.
func (r *Redis) Restarts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.restarts
}

// Stop stops the supervisor, then the server: SIGTERM, which makes Redis flush its AOF and exit,
// then SIGKILL if it has not exited after StopTimeout or when ctx ends. It releases the data
// directory. Calling it again returns the first call's result.
func (r *Redis) Stop(ctx context.Context) error {
	r.stopOnce.Do(func() {
		r.cancel()
		<-r.done
		r.mu.Lock()
		p := r.proc
		r.proc = nil
		r.mu.Unlock()
		if p != nil {
			pid := p.Pid()
			r.stopErr = p.Terminate(ctx, r.cfg.StopTimeout)
			if r.stopErr == nil {
				r.log.Info("embedded redis-server stopped", "pid", pid)
			}
		}
		r.release()
	})
	return r.stopErr
}

// release unlocks the data directory and removes the temporary socket directory.
func (r *Redis) release() {
	r.cancel()
	if r.tmpDir != "" {
		_ = os.RemoveAll(r.tmpDir)
	}
	if r.lock != nil {
		_ = r.lock.Close() // closing the file drops its lock
		r.lock = nil
	}
}
