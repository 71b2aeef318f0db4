//go:build unix

// Package pgtest starts throwaway PostgreSQL servers for tests: a fresh cluster (initdb) in a
// temporary directory, served on a free loopback port with its unix socket in that directory,
// fsync off. The server is stopped and its directory removed when the test ends.
//
// PostgreSQL refuses to run as root, so when the tests run as root the server runs as the
// postgres system user that Debian's package creates. The binaries come from the newest
// /usr/lib/postgresql/<version>/bin, else from PATH; `make test` installs them. The machine's
// own cluster (port 5432) is never used.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/childproc"
)

const (
	installHint = "install it with `sudo apt-get install -y postgresql` (or run `make test`, which installs it)"

	// superuser is the role initdb creates; it logs in without a password (trust).
	superuser = "postgres"
	// startTimeout bounds how long one start waits for the server to accept queries.
	startTimeout = 30 * time.Second
	// startAttempts bounds how many ports a new server tries.
	startAttempts = 8
	// pollInterval is the pause between readiness probes.
	pollInterval = 20 * time.Millisecond
	// stopGrace is how long a shutdown may take before the server is killed.
	stopGrace = 10 * time.Second
)

// errPortInUse marks a start that failed because another process holds the port.
var errPortInUse = errors.New("port already in use")

// Server is one PostgreSQL server (postmaster) process and its data directory.
//
// Its methods are safe for concurrent use.
type Server struct {
	dir  string              // the temporary directory: data/, the unix socket, postgres.log
	bins string              // the directory of initdb and postgres
	cred *syscall.Credential // the user the server runs as; nil: this process's

	mu   sync.Mutex
	port int
	proc *childproc.Process
}

// Start starts a PostgreSQL server for t and registers a cleanup that stops it (the process
// this package started, by its pid) and removes its directory. It fails t if PostgreSQL is not
// installed or does not start; but with DELAYQ_TEST_CORE=1 in the environment (make
// test-core, which needs only redis-server) it skips t when PostgreSQL is not installed.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := newServer()
	if errors.Is(err, errNotInstalled) && os.Getenv("DELAYQ_TEST_CORE") == "1" {
		t.Skipf("pgtest: %v (skipped: DELAYQ_TEST_CORE=1)", err)
	}
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.close(); err != nil {
			t.Errorf("pgtest: cleanup: %v", err)
		}
	})
	if err := s.startFresh(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return s
}

// newServer creates the directory and the cluster in it, without starting the server.
func newServer() (*Server, error) {
	bins, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := serverUser()
	if err != nil {
		return nil, err
	}
	// Not t.TempDir: its parent directory is private to this process's user, which the server
	// may not be.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bins: bins, cred: cred}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := s.initdb(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// URL returns the postgres:// URL of the server's "postgres" database.
func (s *Server) URL() string { return databaseURL(s.Port(), "postgres") }

// Port returns the server's TCP port on 127.0.0.1.
func (s *Server) Port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.port
}

// Dir returns the server's directory: the cluster in data/, the log postgres.log.
func (s *Server) Dir() string { return s.dir }

// Pid returns the process id of the running server, or 0 when it is stopped.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.Pid()
}

// databaseURL returns the URL of database db of the server on port.
func databaseURL(port int, db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(superuser),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Stop shuts the server down (a fast shutdown: sessions are ended, the data kept) and waits
// for the process to exit. Start starts it again on the same port and data.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if err := s.stop(syscall.SIGINT); err != nil {
		t.Fatalf("pgtest: Stop: %v", err)
	}
}

// Start starts a stopped server again, on the same port and data directory, and waits until it
// accepts queries. Another process may have taken the port meanwhile: it waits for it a while.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		err := s.startOnce()
		if err == nil {
			return
		}
		if !errors.Is(err, errPortInUse) || time.Now().After(deadline) {
			t.Fatalf("pgtest: Start: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startFresh starts a new server, trying another port when another process wins the race for
// the chosen one.
func (s *Server) startFresh() error {
	var errs []error
	for range startAttempts {
		port, err := childproc.ReservePort()
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.port = port
		s.mu.Unlock()
		err = s.startOnce()
		if err == nil {
			return nil
		}
		childproc.ReleasePort(port)
		if !errors.Is(err, errPortInUse) {
			return err
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("no free port after %d attempts: %w", startAttempts, errors.Join(errs...))
}

// stop ends the running server, if any, with sig and waits for it to exit.
func (s *Server) stop(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	err := s.proc.Stop(sig, stopGrace)
	s.proc = nil
	return err
}

// close ends the server with an immediate shutdown, which is quick and safe for data about to
// be removed, releases its port and removes its directory.
func (s *Server) close() error {
	err := s.stop(syscall.SIGQUIT)
	s.mu.Lock()
	childproc.ReleasePort(s.port)
	s.mu.Unlock()
	return errors.Join(err, os.RemoveAll(s.dir))
}

// logTail returns the last lines of the server's log, for error messages.
func (s *Server) logTail() string {
	data, err := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// probeLocked checks that the server on the port accepts queries and is the one of this
// directory, not another that took the port. The caller holds s.mu.
func (s *Server) probeLocked(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	dataDir, err := s.query(ctx, databaseURL(s.port, "postgres"), "SELECT current_setting('data_directory')")
	if err != nil {
		return err
	}
	if want := filepath.Join(s.dir, "data"); dataDir != want {
		return fmt.Errorf("port %d is served by the cluster in %s, not %s", s.port, dataDir, want)
	}
	return nil
}
