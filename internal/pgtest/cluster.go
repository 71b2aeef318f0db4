//go:build unix

package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/delayq/delayq/internal/childproc"
)

// errNotInstalled is binDir's error when PostgreSQL's server binaries are not installed.
var errNotInstalled = errors.New("PostgreSQL not found")

// binDir returns the directory of the newest installed PostgreSQL's binaries: Debian installs
// them in /usr/lib/postgresql/<major>/bin, off PATH; elsewhere initdb is on PATH.
func binDir() (string, error) {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	sort.Slice(found, func(i, j int) bool { return majorOf(found[i]) > majorOf(found[j]) })
	if len(found) > 0 {
		return filepath.Dir(found[0]), nil
	}
	initdb, err := exec.LookPath("initdb")
	if err != nil {
		return "", fmt.Errorf("%w (no initdb on PATH or in /usr/lib/postgresql): %s", errNotInstalled, installHint)
	}
	if resolved, err := filepath.EvalSymlinks(initdb); err == nil {
		initdb = resolved
	}
	return filepath.Dir(initdb), nil
}

// majorOf returns the version number in /usr/lib/postgresql/<major>/bin/postgres, or 0.
func majorOf(path string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return n
}

// serverUser returns the user the server runs as: nil (this process's user) unless that is
// root, which initdb and postgres refuse; then the postgres system user.
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL needs an unprivileged user to run as: %w; %s", err, installHint)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user postgres: uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user postgres: gid %q: %w", u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// initdb creates the cluster in dir/data: trust authentication on loopback (the socket and
// port are the test's own), UTF-8, C locale so that results do not depend on the machine, and
// no fsync of the new files.
func (s *Server) initdb() error {
	cmd := exec.Command(filepath.Join(s.bins, "initdb"),
		"--pgdata", filepath.Join(s.dir, "data"),
		"--username", superuser, "--auth", "trust",
		"--encoding", "UTF8", "--locale", "C", "--no-sync")
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return nil
}

// args returns the postgres command line. Durability is off (fsync, synchronous commit, full
// page writes): a test's data dies with it. The buffers are small: several servers share the
// machine.
func (s *Server) args() []string {
	return []string{
		"-D", filepath.Join(s.dir, "data"),
		"-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + s.dir,
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "shared_buffers=32MB",
		"-c", "max_connections=100",
		"-c", "logging_collector=off",
	}
}

// startOnce starts the server on s.port and waits until it accepts queries.
func (s *Server) startOnce() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return fmt.Errorf("port %d: already running", s.port)
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	p, err := childproc.Start(childproc.Options{
		Bin: filepath.Join(s.bins, "postgres"), Args: s.args(), Dir: s.dir, Output: logf,
		DeathSignal: syscall.SIGKILL, Credential: s.cred,
	})
	if err != nil {
		return err
	}
	s.proc = p
	if err := s.waitReady(p); err != nil {
		_ = p.Stop(syscall.SIGQUIT, stopGrace)
		s.proc = nil
		return err
	}
	return nil
}

// waitReady polls the server until it accepts queries, the process exits or startTimeout
// passes. The caller holds s.mu.
func (s *Server) waitReady(p *childproc.Process) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var last error
	for {
		select {
		case <-p.Exited():
			tail := s.logTail()
			err := fmt.Errorf("postgres on port %d exited during start-up (%v); log tail:\n%s", s.port, p.ExitErr(), tail)
			if strings.Contains(tail, "Address already in use") {
				return fmt.Errorf("%w: %w", errPortInUse, err)
			}
			return err
		default:
		}
		if last = s.probeLocked(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres on port %d (pid %d) not ready after %v: %w; log tail:\n%s", s.port, p.Pid(), startTimeout, last, s.logTail())
		case <-time.After(pollInterval):
		case <-p.Exited():
		}
	}
}
