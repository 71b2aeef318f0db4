package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/testwait"
)

// buildBinary builds cmd/delayq into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not found on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "delayq")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", bin, "github.com/delayq/delayq/cmd/delayq")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startBinaryServer runs `bin server` on a free port with env and waits for its "listening on"
// line. drained closes once the server's standard error ends; logs holds all of it.
func startBinaryServer(ctx context.Context, t *testing.T, bin string, env []string) (cmd *exec.Cmd, addr string, logs *testwait.Buffer, drained <-chan struct{}) {
	t.Helper()
	cmd = exec.CommandContext(ctx, bin, "server", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(t.TempDir(), "d"))
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs = &testwait.Buffer{}
	lines := bufio.NewScanner(io.TeeReader(stderr, logs))
	for addr == "" && lines.Scan() {
		if m := listeningRe.FindStringSubmatch(lines.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("no \"listening on\" line; output:\n%s", logs.String())
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for lines.Scan() {
		}
	}()
	return cmd, addr, logs, done
}

func TestBinary(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)

	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd, addr, logs, drained := startBinaryServer(ctx, t, bin, cleanEnv())
			s := &server{URL: "http://" + addr, logs: logs}
			pid := s.redisPid(t)
			s.must(t, "enqueue", "orders", "--body", "1")

			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			<-drained
			err := cmd.Wait()
			if sig == syscall.SIGKILL {
				// No graceful shutdown: the kernel's parent-death signal stops redis-server.
				testwait.For(t, 10*time.Second, "redis-server exits after delayq was killed", func() bool { return !alive(pid) })
				return
			}
			if err != nil {
				t.Errorf("delayq server exited with %v after %v, want exit status 0; output:\n%s", err, sig, logs.String())
			}
			if alive(pid) {
				t.Errorf("embedded redis-server %d still runs after delayq exited", pid)
			}
		})
	}

	t.Run("error exit", func(t *testing.T) {
		t.Parallel()
		cmd := exec.Command(bin, "get", "orders")
		cmd.Env = cleanEnv()
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("delayq get with one argument: %v, want exit status 1", err)
		}
		if !strings.HasPrefix(stderr.String(), "error: accepts 2 arg(s)") || stdout.Len() != 0 {
			t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
		}
	})

	t.Run("ids from standard input", func(t *testing.T) {
		t.Parallel()
		s := startServer(t, nil)
		for _, id := range []string{"x,1", "y,2"} {
			s.must(t, "enqueue", "stdin", "--id", id, "--max-retries", "0")
			var res struct {
				Jobs []struct{ Lease string } `json:"jobs"`
			}
			s.mustJSON(t, &res, "reserve", "stdin")
			if len(res.Jobs) != 1 {
				t.Fatalf("reserve: %+v", res)
			}
			s.must(t, "nack", "stdin", id, "--lease", res.Jobs[0].Lease)
		}
		cmd := exec.Command(bin, "dead", "requeue", "stdin", "--ids-from", "-", "--server", s.URL)
		cmd.Env = cleanEnv()
		cmd.Stdin = strings.NewReader("x,1\n\n  y,2  \nnope\n")
		out, err := cmd.CombinedOutput()
		if err != nil || string(out) != "requeued 2 dead jobs of stdin\n" {
			t.Errorf("dead requeue --ids-from - printed %q, %v", out, err)
		}
	})

	t.Run("api error exit", func(t *testing.T) {
		t.Parallel()
		s := startServer(t, nil)
		cmd := exec.Command(bin, "get", "orders", "nope", "--server", s.URL)
		cmd.Env = cleanEnv()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("delayq get of a missing job: %v, want exit status 1", err)
		}
		if !strings.HasPrefix(stderr.String(), "error: not_found: ") {
			t.Errorf("stderr %q, want error: not_found: <message>", stderr.String())
		}
	})
}

// cleanEnv is the test's environment without delayq's variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DELAYQ_") && !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	return env
}
