//go:build unix

package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
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
		ctx := context.Background()
		conn := connect(t, s.URL())
		var dataDir string
		if err := conn.QueryRow(ctx, "SELECT current_setting('data_directory')").Scan(&dataDir); err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, "data"); dataDir != want {
			t.Errorf("data_directory = %q, want %q", dataDir, want)
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)"); err != nil {
			t.Fatal(err)
		}
		port := s.Port()
		s.Stop(t)
		if s.Pid() != 0 || processAlive(pid) {
			t.Fatalf("pid %d still running after Stop", pid)
		}
		if _, err := pgx.Connect(ctx, s.URL()); err == nil {
			t.Fatal("connected to a stopped server")
		}
		s.Start(t)
		if s.Port() != port {
			t.Errorf("port after Start = %d, want %d", s.Port(), port)
		}
		pid = s.Pid()
		var n int
		if err := connect(t, s.URL()).QueryRow(ctx, "SELECT n FROM kept").Scan(&n); err != nil || n != 7 {
			t.Fatalf("after Stop and Start: n = %d, err = %v; want 7", n, err)
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
	ctx := context.Background()
	var first string
	t.Run("a", func(t *testing.T) {
		first = s.NewDatabase(t)
		if _, err := connect(t, first).Exec(ctx, "CREATE TABLE mine (n int)"); err != nil {
			t.Fatal(err)
		}
		// A session still open when the test ends must not keep the database from being dropped.
		open, err := pgx.Connect(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		outer.Cleanup(func() { open.Close(ctx) })
	})
	t.Run("b", func(t *testing.T) {
		second := s.NewDatabase(t)
		if second == first {
			t.Fatalf("the same URL twice: %s", first)
		}
		_, err := connect(t, second).Exec(ctx, "SELECT * FROM mine")
		if err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("table of another test's database visible: err = %v", err)
		}
	})
	if _, err := pgx.Connect(ctx, first); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("database of an ended test still there: connect err = %v", err)
	}
}
