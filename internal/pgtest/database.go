//go:build unix

package pgtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// databases numbers the databases of NewDatabase, so that their names are unique in the process.
var databases atomic.Int64

// notName matches what may not appear in a database name of NewDatabase.
var notName = regexp.MustCompile(`[^a-z0-9_]+`)

// NewDatabase creates an empty database for t on the server and returns its URL; the database
// is dropped when t ends, its sessions ended first. Tests sharing one server each take one to
// stay out of each other's tables.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := notName.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(name) > 40 { // names are at most 63 bytes
		name = name[:40]
	}
	name = fmt.Sprintf("t%d_%s", databases.Add(1), name)
	if err := s.exec(fmt.Sprintf("CREATE DATABASE %s", quoteName(name))); err != nil {
		t.Fatalf("pgtest: NewDatabase: %v", err)
	}
	t.Cleanup(func() {
		if s.Pid() == 0 {
			return // stopped by the test: nothing to drop from
		}
		if err := s.exec(fmt.Sprintf("DROP DATABASE %s WITH (FORCE)", quoteName(name))); err != nil {
			t.Errorf("pgtest: dropping database %s: %v", name, err)
		}
	})
	return databaseURL(s.Port(), name)
}

// exec runs one statement in the "postgres" database.
func (s *Server) exec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := s.query(ctx, s.URL(), sql)
	return err
}

// query runs one statement with the installation's psql, on the database at url, and returns
// its result unaligned, without headers: one line a row, "|" between values. PostgreSQL's own
// client keeps a driver out of the tests' dependencies.
func (s *Server) query(ctx context.Context, url, sql string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(s.bins, "psql"),
		"--no-psqlrc", "--quiet", "--no-align", "--tuples-only", "--set", "ON_ERROR_STOP=1",
		"--dbname", url, "--command", sql)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("psql %q: %w: %s", sql, err, strings.TrimSpace(errOut.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// quoteName quotes a name of NewDatabase, made of [a-z0-9_] only, as an SQL identifier.
func quoteName(name string) string { return `"` + name + `"` }

// RunWithServer starts a server for a whole test binary, stores it in *srv, runs the tests and
// stops the server. It is for TestMain of packages whose tests share one server, each with a
// database of its own (NewDatabase). It returns m.Run's exit code.
func RunWithServer(m *testing.M, srv **Server) int {
	s, err := newServer()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		return 1
	}
	defer func() {
		if err := s.close(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stopping the server: %v\n", err)
		}
	}()
	if err := s.startFresh(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		return 1
	}
	*srv = s
	return m.Run()
}
