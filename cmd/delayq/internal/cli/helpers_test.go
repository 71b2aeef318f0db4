package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/cli"
	"github.com/delayq/delayq/internal/testwait"
)

var (
	listeningRe = regexp.MustCompile(`listening on ([^\s"]+)`)
	redisPidRe  = regexp.MustCompile(`embedded redis-server (?:started|restarted).*? pid=(\d+)`)
)

// server is a `delayq server` run in-process by cli.Run.
type server struct {
	URL  string
	Dir  string // the data directory
	logs *testwait.Buffer
	stop context.CancelFunc
	done chan error

	stopOnce sync.Once
	stopErr  error
}

// startServer runs `delayq server --listen 127.0.0.1:0 --data-dir <temp> args...` and waits for
// its "listening on" line. The server is stopped, and checked to exit cleanly and leave no
// redis-server behind, when the test ends.
func startServer(t *testing.T, env map[string]string, args ...string) *server {
	t.Helper()
	dir := t.TempDir() + "/data"
	all := append([]string{"server", "--listen", "127.0.0.1:0", "--data-dir", dir}, args...)
	return startServerArgs(t, env, dir, all...)
}

// startServerArgs runs cli.Run with exactly args.
func startServerArgs(t *testing.T, env map[string]string, dir string, args ...string) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{Dir: dir, logs: &testwait.Buffer{}, stop: cancel, done: make(chan error, 1)}
	go func() { s.done <- cli.Run(ctx, args, getenv(env), io.Discard, s.logs) }()
	t.Cleanup(cancel) // also when start-up fails
	testwait.ForNil(t, 30*time.Second, "the server's \"listening on\" line", func() error {
		logs := s.logs.String()
		if m := listeningRe.FindStringSubmatch(logs); m != nil {
			s.URL = "http://" + m[1]
			return nil
		}
		select {
		case err := <-s.done:
			t.Fatalf("server exited during start-up: %v\nlogs:\n%s", err, logs)
		default:
		}
		return fmt.Errorf("logs:\n%s", logs)
	})
	t.Cleanup(func() {
		pids := s.redisPids()
		if err := s.Stop(t); err != nil {
			t.Errorf("server Run returned %v, want nil after a graceful shutdown", err)
		}
		for _, pid := range pids {
			if alive(pid) {
				t.Errorf("embedded redis-server %d still runs after the server stopped", pid)
			}
		}
		if t.Failed() {
			t.Logf("server logs:\n%s", s.logs)
		}
	})
	return s
}

// Stop cancels the server's context and returns what Run returned.
func (s *server) Stop(t *testing.T) error {
	t.Helper()
	s.stopOnce.Do(func() {
		s.stop()
		select {
		case s.stopErr = <-s.done:
		case <-time.After(40 * time.Second):
			s.stopErr = errors.New("Run did not return 40s after its context was cancelled")
		}
	})
	return s.stopErr
}

// redisPids returns the process ids of the embedded redis-servers the server has started.
func (s *server) redisPids() []int {
	var pids []int
	for _, m := range redisPidRe.FindAllStringSubmatch(s.logs.String(), -1) {
		pid, _ := strconv.Atoi(m[1])
		pids = append(pids, pid)
	}
	return pids
}

// redisPid returns the process id of the embedded redis-server started last.
func (s *server) redisPid(t *testing.T) int {
	t.Helper()
	pids := s.redisPids()
	if len(pids) == 0 {
		t.Fatalf("no embedded redis-server in the logs:\n%s", s.logs)
	}
	return pids[len(pids)-1]
}

// run runs a client command against s and returns its standard output.
func (s *server) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runCLI(t, nil, append(args, "--server", s.URL)...)
}

// must is run that fails the test on error.
func (s *server) must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := s.run(t, args...)
	if err != nil {
		t.Fatalf("delayq %s: %v\noutput:\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// mustJSON runs a command with --json and decodes its output into v.
func (s *server) mustJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out := s.must(t, append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("delayq %s --json: %v\noutput:\n%s", strings.Join(args, " "), err, out)
	}
}

// runCLI runs the command line with env and returns its standard output.
func runCLI(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	stdout, _, err := runCLIFull(t, env, args...)
	return stdout, err
}

// runCLIFull runs the command line with env and returns its standard output and error.
func runCLIFull(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	err = cli.Run(ctx, args, getenv(env), &out, &errOut)
	return out.String(), errOut.String(), err
}

func getenv(env map[string]string) func(string) string {
	return func(name string) string { return env[name] }
}

// alive reports whether a process with this id runs. A zombie (exited, not yet reaped by
// whoever adopted it) does not count.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// runServerOnce runs a server command line that is expected to fail at start-up. Should it
// start instead, it is stopped after 15s and returns nil.
func runServerOnce(env map[string]string, args []string, logs io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return cli.Run(ctx, args, getenv(env), io.Discard, logs)
}
