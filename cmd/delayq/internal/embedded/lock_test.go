package embedded_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/embedded"
	"github.com/delayq/delayq/internal/testwait"
)

// serveDirEnv, when set, makes the test binary a stand-in for delayq server: it starts an
// embedded Redis in that directory, prints the redis-server's pid and runs until its stdin
// closes or it is killed.
const serveDirEnv = "DELAYQ_EMBEDDED_TEST_SERVE_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(serveDirEnv); dir != "" {
		os.Exit(serve(dir))
	}
	os.Exit(m.Run())
}

func serve(dir string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := embedded.Start(ctx, embedded.Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(r.Pid())
	_, _ = io.Copy(io.Discard, os.Stdin) // the test ended without killing this process
	if err := r.Stop(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestLockOutlivesCrashedServer checks that a delayq server that dies without stopping its
// redis-server leaves the data directory locked until that redis-server has exited, so that a
// second server cannot start another redis-server on the same AOF meanwhile.
func TestLockOutlivesCrashedServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	server := exec.Command(os.Args[0])
	server.Env = append(os.Environ(), serveDirEnv+"="+dir)
	server.Stderr = testWriter{t}
	stdin, err := server.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := server.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = server.Process.Kill()
		_ = server.Wait()
		t.Fatalf("the server printed no redis-server pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		_ = server.Process.Kill()
		_ = server.Wait()
		t.Fatalf("the server printed %q, want a pid", line)
	}
	// The orphan is not this process's child, so nothing here can wait for it; should the
	// test end before it has exited, kill it and let its new parent reap it.
	exited := false
	t.Cleanup(func() {
		if !exited {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	_ = server.Process.Kill()
	_ = server.Wait()

	// The orphan gets its parent-death signal (SIGTERM, on Linux) and shuts down. Until it has
	// exited, the directory stays locked: whenever the lock is found free, it is gone.
	if runtime.GOOS != "linux" {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	testwait.For(t, 20*time.Second, "the data directory's lock to be free", func() bool {
		f, err := os.OpenFile(filepath.Join(dir, "delayq.lock"), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			return false
		}
		// The kernel closes an exiting process's files a moment before it turns into a zombie.
		testwait.For(t, 2*time.Second, fmt.Sprintf("the crashed server's redis-server (pid %d), whose data directory is free, to exit", pid),
			func() bool { return !alive(pid) })
		return true
	})
	testwait.For(t, 20*time.Second, "Start to get the data directory", func() bool {
		r, err := embedded.Start(testContext(t), embedded.Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
		if errors.Is(err, embedded.ErrLocked) {
			return false
		}
		if err != nil {
			t.Fatalf("Start after the old redis-server exited: %v", err)
		}
		if err := r.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
		return true
	})
	exited = true // the lock was free, so the old redis-server had exited
}
