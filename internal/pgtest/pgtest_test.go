//go:build unix

package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// query runs sql on the database at url and returns its rows as psql prints them unaligned.
func query(s *Server, url, sql string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.query(ctx, url, sql)
}

// holdSession opens a session on the database at url that stays open until the test's
// cleanup (a psql process waiting in pg_sleep, ended by its pid), and returns once it is in.
func holdSession(t *testing.T, s *Server, url string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(s.bins, "psql"), "--no-psqlrc", "--quiet", "--dbname", url,
		"--command", "SELECT pg_sleep(300)")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := query(s, url, "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(300)'")
		if err == nil && n == "1" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the held session did not show in pg_stat_activity: %q, %v", n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processUID returns the real uid of process pid from /proc.
func processUID(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			return strings.Fields(rest)[0]
		}
	}
	t.Fatalf("no Uid line in /proc/%d/status", pid)
	return ""
}

// TestServerLifecycle starts a server, checks that it is the test's own and not run as root,
// stops it, starts it again on the same port with its data, and checks that the cleanup ends
// the process and removes the directory.
func TestServerLifecycle(t *testing.T) {
	var pid int
	var dir string
	t.Run("server", func(t *testing.T) {
		s := Start(t)
		pid, dir = s.Pid(), s.Dir()
		if s.Port() == 5432 || s.Port() == 0 {
			t.Fatalf("port %d", s.Port())
		}
		if uid := processUID(t, pid); os.Geteuid() == 0 && uid == "0" {
			t.Errorf("postgres runs as root")
		}
		dataDir, err := query(s, s.URL(), "SELECT current_setting('data_directory')")
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, "data"); dataDir != want {
			t.Errorf("data_directory = %q, want %q", dataDir, want)
		}
		if _, err := query(s, s.URL(), "CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)"); err != nil {
			t.Fatal(err)
		}
		port := s.Port()
		s.Stop(t)
		if s.Pid() != 0 || processAlive(pid) {
			t.Fatalf("pid %d still running after Stop", pid)
		}
		if _, err := query(s, s.URL(), "SELECT 1"); err == nil {
			t.Fatal("connected to a stopped server")
		}
		s.Start(t)
		if s.Port() != port {
			t.Errorf("port after Start = %d, want %d", s.Port(), port)
		}
		pid = s.Pid()
		if n, err := query(s, s.URL(), "SELECT n FROM kept"); err != nil || n != "7" {
			t.Fatalf("after Stop and Start: n = %q, err = %v; want 7", n, err)
		}
	})
	if processAlive(pid) {
		t.Errorf("postgres pid %d still running after the test's cleanup", pid)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory %s still there after the test's cleanup: %v", dir, err)
	}
}

// processAlive reports whether pid is a process that has not been reaped.
func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

// TestNewDatabase checks that two tests' databases on one server do not see each other's
// tables, and that a database is gone once its test has ended.
func TestNewDatabase(t *testing.T) {
	s := Start(t)
	outer := t
	var first string
	t.Run("a", func(t *testing.T) {
		first = s.NewDatabase(t)
		if _, err := query(s, first, "CREATE TABLE mine (n int)"); err != nil {
			t.Fatal(err)
		}
		// A session still open when the test ends must not keep the database from being dropped.
		holdSession(outer, s, first)
	})
	t.Run("b", func(t *testing.T) {
		second := s.NewDatabase(t)
		if second == first {
			t.Fatalf("the same URL twice: %s", first)
		}
		_, err := query(s, second, "SELECT * FROM mine")
		if err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("table of another test's database visible: err = %v", err)
		}
	})
	if _, err := query(s, first, "SELECT 1"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("database of an ended test still there: connect err = %v", err)
	}
}
