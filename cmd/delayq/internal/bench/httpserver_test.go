package bench

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/redistest"
)

var built struct {
	once sync.Once
	bin  string
	err  error
}

// DelayqBinary builds the delayq command once per test binary and returns its path: a test
// binary is not delayq, so the http scenario cannot run itself as its server.
func DelayqBinary(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "delayq-bench-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "delayq")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", built.bin, commandPath).CombinedOutput()
		if err != nil {
			built.err = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.bin != "" {
		os.RemoveAll(filepath.Dir(built.bin))
	}
	os.Exit(code)
}

// TestServerStopsWithItsContext starts `delayq server`, checks that it answers, and that
// ending the context that started it ends the process.
func TestServerStopsWithItsContext(t *testing.T) {
	t.Parallel()
	bin := DelayqBinary(t)
	srv := redistest.Standalone(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := startServer(ctx, bin, "redis://"+srv.Addr, "stops")
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	g := newLoadgen(p.base)
	cs, err := g.conns(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	closeConns(cs)
	if _, err := processCPU(p.proc.Pid()); err != nil {
		t.Errorf("reading the server's CPU time: %v", err)
	}
	cancel()
	select {
	case <-p.proc.Exited():
	case <-time.After(serverStopTimeout + 5*time.Second):
		t.Fatalf("the server (pid %d) still runs after its context ended", p.proc.Pid())
	}
	if err := p.proc.ExitErr(); err != nil {
		t.Errorf("the server did not exit cleanly on SIGTERM: %v\n%s", err, p.log.tail())
	}
}

// TestServerEnv checks that the server gets none of the DELAYQ_ settings of the benchmark's
// environment.
func TestServerEnv(t *testing.T) {
	t.Parallel()
	got := serverEnv([]string{"PATH=/bin", "DELAYQ_AUTH_TOKENS=x", "HOME=/h", "DELAYQ_REDIS=redis://elsewhere"})
	if len(got) != 2 || got[0] != "PATH=/bin" || got[1] != "HOME=/h" {
		t.Errorf("serverEnv = %q, want PATH and HOME alone", got)
	}
}

func TestProcessCPU(t *testing.T) {
	t.Parallel()
	before, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the kernel has counted at least one more tick for this process.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		after, err := processCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			return
		}
	}
	t.Fatalf("the CPU time of pid %d stayed at %v while it spun for 10s", os.Getpid(), before)
}

// TestServerLog checks that the listening address is found whichever way the output is cut
// into writes, and that the tail keeps the last lines.
func TestServerLog(t *testing.T) {
	t.Parallel()
	out := `time=x level=INFO msg="listening on 127.0.0.1:40123" addr=127.0.0.1:40123` + "\n"
	for cut := range len(out) {
		l := newServerLog()
		_, _ = l.Write([]byte(out[:cut]))
		_, _ = l.Write([]byte(out[cut:]))
		select {
		case addr := <-l.listening:
			if addr != "127.0.0.1:40123" {
				t.Fatalf("cut at %d: address %q", cut, addr)
			}
		default:
			t.Fatalf("cut at %d: no address", cut)
		}
	}
	l := newServerLog()
	for i := range serverLogLines + 10 {
		_, _ = l.Write([]byte("line " + strconv.Itoa(i) + "\n"))
	}
	_, _ = l.Write([]byte("partial"))
	tail := l.tail()
	if want := "line 10\n"; tail[:len(want)] != want {
		t.Errorf("tail starts %q, want %q", tail[:20], want)
	}
	if want := "line 49\npartial"; tail[len(tail)-len(want):] != want {
		t.Errorf("tail ends %q, want %q", tail[len(tail)-20:], want)
	}
}

// StartServer runs bin as `delayq server` on redisURL until the test ends, and returns its
// base URL and process id.
func StartServer(t testing.TB, bin, redisURL string) (base string, pid int) {
	t.Helper()
	p, err := startServer(context.Background(), bin, redisURL, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	return p.base, p.proc.Pid()
}
