// Package beanstalktest starts real beanstalkd processes (Debian's beanstalkd package, 1.12) on
// free loopback ports for tests: the reference that the beanstalkd front end's replies are
// compared with.
//
// Every process is owned by the test that started it and is killed, by its process id, when the
// test ends. A start that loses a port race against another process is retried on a new port.
// The beanstalkd binary must be on PATH; `make test` installs it (scripts/ensure-beanstalkd.sh).
package beanstalktest

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
	"syscall"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/childproc"
	"github.com/delayq/delayq/internal/redisproc"
)

const (
	installHint = "install it with `sudo apt-get install -y beanstalkd` (or run `make test`, which installs it)"
	// startTimeout bounds how long one start waits for the server to accept a connection.
	startTimeout = 10 * time.Second
	// startAttempts bounds how many ports a new server tries.
	startAttempts = 8
	pollInterval  = 10 * time.Millisecond
	killTimeout   = 10 * time.Second
)

// Option configures a server started by Start.
type Option func(*config)

type config struct {
	binlog  bool     // -b <dir>: write-ahead log in the server's Dir
	maxJob  int      // -z: maximum job size; 0 keeps beanstalkd's default of 65,535
	extra   []string // further command-line arguments
	binPath string
}

// WithBinlog turns on beanstalkd's write-ahead log (-b) in the server's Dir.
func WithBinlog() Option { return func(c *config) { c.binlog = true } }

// WithMaxJobSize sets beanstalkd's maximum job size in bytes (-z).
func WithMaxJobSize(n int) Option { return func(c *config) { c.maxJob = n } }

// WithArgs appends extra beanstalkd command-line arguments.
func WithArgs(args ...string) Option { return func(c *config) { c.extra = append(c.extra, args...) } }

// Server is one beanstalkd process.
type Server struct {
	// Dir is the server's directory: the binlog (WithBinlog) and its output file, beanstalkd.log.
	Dir  string
	addr string
	proc *childproc.Process
}

// Addr returns the server's "127.0.0.1:port" address.
func (s *Server) Addr() string { return s.addr }

// Pid returns the server's process id.
func (s *Server) Pid() int { return s.proc.Pid() }

// Start starts a beanstalkd on a free loopback port, waits until it accepts connections, and
// registers a cleanup with t that kills it by its process id.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	bin, err := exec.LookPath("beanstalkd")
	if err != nil {
		t.Fatalf("beanstalktest: beanstalkd not found: %s", installHint)
	}
	cfg.binPath = bin
	s := &Server{Dir: t.TempDir()}
	var errs []error
	for range startAttempts {
		err := s.startOnce(cfg)
		if err == nil {
			t.Cleanup(func() {
				if err := s.proc.Kill(killTimeout); err != nil {
					t.Errorf("beanstalktest: %v", err)
				}
			})
			return s
		}
		errs = append(errs, err)
		if !errors.Is(err, childproc.ErrExited) {
			break
		}
	}
	t.Fatalf("beanstalktest: could not start beanstalkd: %v", errors.Join(errs...))
	return nil
}

// startOnce starts the process on a newly picked port and waits for it to accept a
// connection. A process that exits first (the port was taken meanwhile) reports ErrExited.
func (s *Server) startOnce(cfg config) error {
	port, err := redisproc.ReservePort()
	if err != nil {
		return err
	}
	// The reservation only keeps this process's own helpers off the port; beanstalkd holds it
	// from now on, or exits if something else took it.
	defer redisproc.ReleasePort(port)
	s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logPath := filepath.Join(s.Dir, "beanstalkd.log")
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	s.proc, err = childproc.Start(childproc.Options{
		Bin:         cfg.binPath,
		Args:        cfg.args(port, s.Dir),
		Output:      out,
		DeathSignal: syscall.SIGKILL,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	err = s.proc.WaitReady(ctx, pollInterval, childproc.Accepts(s.addr))
	if err != nil {
		_ = s.proc.Kill(killTimeout)
		return fmt.Errorf("%w; log: %s", err, strings.TrimSpace(childproc.LogTail(logPath, 5)))
	}
	return nil
}

// args returns the beanstalkd command line.
func (c config) args(port int, dir string) []string {
	args := []string{"-l", "127.0.0.1", "-p", strconv.Itoa(port)}
	if c.binlog {
		args = append(args, "-b", dir)
	}
	if c.maxJob > 0 {
		args = append(args, "-z", strconv.Itoa(c.maxJob))
	}
	return append(args, c.extra...)
}
