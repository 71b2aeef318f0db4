// Package redistest starts real redis-server processes (standalone servers,
// Redis Cluster and Sentinel set-ups) on free loopback ports for tests.
//
// Every process is owned by the test that started it: it is killed with
// SIGKILL and its directory removed when the test ends. The helpers are safe
// to use from parallel tests and from many test binaries at once; a start
// that loses a port race against another process is retried on a new port.
//
// The redis-server and redis-cli binaries must be on PATH (Debian packages
// redis-server and redis-tools); `make test` installs them.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/childproc"
	"github.com/delayq/delayq/internal/redisproc"
	"github.com/delayq/delayq/internal/testwait"
)

const (
	installHint = "install it with `sudo apt-get install -y redis-server redis-tools` (or run `make test`, which installs it)"

	// startTimeout bounds how long one start waits for the server to answer.
	startTimeout = 10 * time.Second
	// startAttempts bounds how many ports a new server tries.
	startAttempts = 8
	// pollInterval is the pause between readiness probes.
	pollInterval = 10 * time.Millisecond
	// probeTimeout bounds one readiness probe connection.
	probeTimeout = time.Second
)

// errPortInUse marks a start that failed because the port was taken.
var errPortInUse = errors.New("port already in use")

// Option configures a server started by Standalone.
type Option func(*config)

type config struct {
	appendFsync string   // "" means appendonly no
	args        []string // extra redis-server arguments
	cluster     bool     // --cluster-enabled yes
	// sentinelConf, if set, makes the server a Sentinel: it returns the
	// contents of the configuration file for the given port and dir.
	sentinelConf func(port int, dir string) string
}

// WithAppendOnly turns on the append-only file (appendonly yes) with the
// given appendfsync policy, "always" or "everysec" ("no" is accepted too).
// The AOF lives in the server's Dir, so it survives Kill and Restart.
func WithAppendOnly(fsync string) Option {
	return func(c *config) { c.appendFsync = fsync }
}

// WithArgs appends extra redis-server command-line arguments, for example
// WithArgs("--maxmemory", "10mb"). They come after the helper's defaults and
// so override them.
func WithArgs(args ...string) Option {
	return func(c *config) { c.args = append(c.args, args...) }
}

// Server is one redis-server process.
//
// Its methods are safe for concurrent use.
type Server struct {
	// Addr is the server's "127.0.0.1:port" address.
	Addr string
	// Dir is the server's working directory: AOF and RDB files, nodes.conf,
	// sentinel.conf and the log file redis.log live here.
	Dir string

	port int
	bin  string
	cfg  config

	mu   sync.Mutex
	proc *childproc.Process
}

// Standalone starts a redis-server on a free loopback port, waits until it
// answers PING and registers a cleanup with t that kills it and removes its
// directory. By default it runs with `--save "" --appendonly no`, and
// with `--repl-diskless-sync-delay 0 --repl-ping-replica-period 1` so that
// replication settles fast.
func Standalone(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	switch cfg.appendFsync {
	case "", "always", "everysec", "no":
	default:
		t.Fatalf("redistest: WithAppendOnly(%q): want \"always\" or \"everysec\"", cfg.appendFsync)
	}
	return start(t, cfg)
}

// lookBin finds a Redis binary on PATH or fails the test with an install hint.
func lookBin(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: %s", name, installHint)
	}
	return p
}

// start creates and starts a server for cfg, retrying on a new port when
// another process wins the race for the chosen one.
func start(t testing.TB, cfg config) *Server {
	t.Helper()
	s := &Server{
		bin: lookBin(t, "redis-server"),
		cfg: cfg,
		// t.TempDir registers its removal before the kill cleanup below, so
		// (cleanups run last-in first-out) the process is dead before its
		// directory goes away.
		Dir: t.TempDir(),
	}
	t.Cleanup(func() {
		if err := s.kill(); err != nil {
			t.Errorf("redistest: cleanup of %s: %v", s.Addr, err)
		}
		s.mu.Lock()
		redisproc.ReleasePort(s.port)
		s.port = 0
		s.mu.Unlock()
	})

	var errs []error
	for attempt := 0; attempt < startAttempts; attempt++ {
		port, err := redisproc.ReservePort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		s.mu.Lock()
		s.port = port
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		s.mu.Unlock()

		err = s.startOnce(true)
		if err == nil {
			return s
		}
		_ = s.kill()
		s.mu.Lock()
		redisproc.ReleasePort(s.port)
		s.port = 0
		s.mu.Unlock()
		if !errors.Is(err, errPortInUse) {
			t.Fatalf("redistest: %v", err)
		}
		errs = append(errs, err)
	}
	t.Fatalf("redistest: could not start redis-server after %d attempts: %v", startAttempts, errors.Join(errs...))
	return nil
}

// args returns the redis-server command line for the server's port.
func (s *Server) args(fresh bool) ([]string, error) {
	if s.cfg.sentinelConf != nil {
		conf := filepath.Join(s.Dir, "sentinel.conf")
		// On a restart keep the file: Sentinel rewrote it with its state.
		if fresh {
			if err := os.WriteFile(conf, []byte(s.cfg.sentinelConf(s.port, s.Dir)), 0o600); err != nil {
				return nil, err
			}
		}
		return []string{conf, "--sentinel"}, nil
	}
	args := []string{
		"--bind", "127.0.0.1",
		"--port", strconv.Itoa(s.port),
		"--dir", s.Dir,
		"--daemonize", "no",
		"--logfile", filepath.Join(s.Dir, "redis.log"),
		"--save", "",
		// Replicas of a test server should sync at once instead of waiting
		// the default 5 s for more replicas to batch a diskless sync.
		"--repl-diskless-sync-delay", "0",
		// An idle primary pings its replicas every second instead of every
		// 10 s. Until that first ping moves the replication offset off 0,
		// Redis Cluster leaves the replicas out of CLUSTER SLOTS.
		"--repl-ping-replica-period", "1",
	}
	if s.cfg.appendFsync != "" {
		args = append(args, "--appendonly", "yes", "--appendfsync", s.cfg.appendFsync)
	} else {
		args = append(args, "--appendonly", "no")
	}
	if s.cfg.cluster {
		args = append(args, redisproc.ClusterArgs(filepath.Join(s.Dir, "nodes.conf"))...)
	}
	return append(args, s.cfg.args...), nil
}

// startOnce starts the process on s.port and waits until it is ready. fresh
// is false for a Restart, which keeps the directory's contents.
func (s *Server) startOnce(fresh bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return fmt.Errorf("%s: already running", s.Addr)
	}
	if fresh {
		// Drop the log of a previous attempt that lost its port.
		_ = os.Remove(filepath.Join(s.Dir, "redis.log"))
		_ = os.Remove(filepath.Join(s.Dir, "stdio.log"))
	}
	args, err := s.args(fresh)
	if err != nil {
		return err
	}
	stdio, err := os.OpenFile(filepath.Join(s.Dir, "stdio.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	// Should the test binary die without running its cleanups (a panic, a -timeout), the kernel
	// kills the server, so that none outlives the test process.
	p, err := childproc.Start(childproc.Options{
		Bin: s.bin, Args: args, Dir: s.Dir, Output: stdio, DeathSignal: syscall.SIGKILL,
	})
	if err != nil {
		return err
	}
	s.proc = p
	return s.waitReady(p)
}

// waitReady polls the server until it answers PING and INFO reports our
// process id (so a server of another test that grabbed the port does not
// count), the process exits, or startTimeout passes.
func (s *Server) waitReady(p *childproc.Process) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	err := p.WaitReady(ctx, pollInterval, func(context.Context) error { return probe(s.Addr, p.Pid()) })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, childproc.ErrExited):
		tail := s.logTail()
		err := fmt.Errorf("redis-server %s: %w; log tail:\n%s", s.Addr, err, tail)
		if strings.Contains(tail, "Address already in use") {
			return fmt.Errorf("%w: %w", errPortInUse, err)
		}
		return err
	default:
		return fmt.Errorf("redis-server %s (pid %d) not ready after %v: %w; log tail:\n%s", s.Addr, p.Pid(), startTimeout, err, s.logTail())
	}
}

// probe checks that the server at addr answers PING and is process pid.
func probe(addr string, pid int) error {
	pong, err := doString(addr, probeTimeout, "PING")
	if err != nil {
		return err
	}
	if pong != "PONG" {
		return fmt.Errorf("PING answered %q", pong)
	}
	info, err := doString(addr, probeTimeout, "INFO", "server")
	if err != nil {
		return err
	}
	if got, _ := infoField(info, "process_id"); got != strconv.Itoa(pid) {
		return fmt.Errorf("%s is served by process %s, not %d", addr, got, pid)
	}
	return nil
}

// logTail returns the last lines of the server's log and captured output.
func (s *Server) logTail() string {
	var b strings.Builder
	for _, name := range []string{"redis.log", "stdio.log"} {
		path := filepath.Join(s.Dir, name)
		if st, err := os.Stat(path); err != nil || st.Size() == 0 {
			continue
		}
		fmt.Fprintf(&b, "--- %s ---\n%s\n", name, childproc.LogTail(path, 30))
	}
	if b.Len() == 0 {
		return "(no log output)"
	}
	return b.String()
}

// kill sends SIGKILL to the process, if any, and waits until it has exited.
func (s *Server) kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc
	if p == nil {
		return nil
	}
	if err := p.Kill(10 * time.Second); err != nil {
		return err
	}
	s.proc = nil
	return nil
}

// Client returns a new go-redis client connected to the server; it is
// closed when the test ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Pid returns the process id of the running redis-server, or 0 if it is
// not running (after Kill).
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.Pid()
}

// Kill sends SIGKILL to the server and waits until the process has exited.
// It does nothing if the server is not running. Restart starts it again.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	if err := s.kill(); err != nil {
		t.Fatalf("redistest: Kill %s: %v", s.Addr, err)
	}
}

// Stop sends SIGSTOP to the server and waits until the process is stopped,
// so that it accepts connections (the kernel queues them) but answers
// nothing. Cont resumes it; a stopped server is still killed at cleanup.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.signal(t, syscall.SIGSTOP, true)
}

// Cont sends SIGCONT to a server paused by Stop and waits until the process
// runs again.
func (s *Server) Cont(t testing.TB) {
	t.Helper()
	s.signal(t, syscall.SIGCONT, false)
}

func (s *Server) signal(t testing.TB, sig syscall.Signal, stop bool) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		t.Fatalf("redistest: %v %s: server is not running", sig, s.Addr)
	}
	pid := s.proc.Pid()
	s.proc.Signal(sig)
	testwait.ForNil(t, 5*time.Second, fmt.Sprintf("redistest: %s to follow %v", s.Addr, sig), func() error {
		state, err := procState(pid)
		if err != nil {
			t.Fatalf("redistest: %v %s: %v", sig, s.Addr, err)
		}
		if (state == 'T') != stop {
			return fmt.Errorf("process state still %q", state)
		}
		return nil
	})
}

// procState returns the state letter of a process from /proc/<pid>/stat.
func procState(pid int) (byte, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The state follows the parenthesised command name, which may contain
	// spaces and parentheses itself.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 || i+2 >= len(data) {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, data)
	}
	return data[i+2], nil
}

// Restart starts the server again on the same port with the same directory
// (so with the same AOF, RDB or nodes.conf) and waits until it is ready. A
// server that is still running is killed first. Extra redis-server arguments,
// if given, are added to the server's own from then on.
func (s *Server) Restart(t testing.TB, args ...string) {
	t.Helper()
	s.mu.Lock()
	s.cfg.args = append(s.cfg.args, args...)
	s.mu.Unlock()
	if err := s.kill(); err != nil {
		t.Fatalf("redistest: Restart %s: %v", s.Addr, err)
	}
	// The port is reserved in this process, but another test binary may
	// have grabbed it while the server was down; wait a bit for it.
	deadline := time.Now().Add(startTimeout)
	for {
		err := s.startOnce(false)
		if err == nil {
			return
		}
		_ = s.kill()
		if !errors.Is(err, errPortInUse) || time.Now().After(deadline) {
			t.Fatalf("redistest: Restart %s: %v", s.Addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
