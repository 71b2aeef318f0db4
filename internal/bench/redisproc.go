package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a temporary redis-server child process on a loopback port, with Redis's
// default settings (hz 10) and no persistence, for a benchmark to own and flush.
type RedisServer struct {
	// Addr is the server's 127.0.0.1:port address.
	Addr string

	cmd    *exec.Cmd
	dir    string
	exited chan struct{}
}

// StartRedis starts redis-server (found on PATH) on a free loopback port and waits until it
// answers PING. extraArgs are appended to its command line. Stop ends it.
func StartRedis(ctx context.Context, extraArgs ...string) (*RedisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("bench: redis-server not found (Debian: apt-get install redis-server): %w", err)
	}
	var last error
	for range 5 {
		s, err := startRedis(ctx, bin, extraArgs)
		if err == nil {
			return s, nil
		}
		last = err
	}
	return nil, last
}

func startRedis(ctx context.Context, bin string, extraArgs []string) (*RedisServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "delayq-bench-redis-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	args := append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir,
		"--logfile", filepath.Join(dir, "redis.log"),
	}, extraArgs...)
	cmd := exec.Command(bin, args...)
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: starting redis-server: %w", err)
	}
	s := &RedisServer{Addr: fmt.Sprintf("127.0.0.1:%d", port), cmd: cmd, dir: dir, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := rdb.Ping(pctx).Err()
		cancel()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.exited:
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			os.RemoveAll(dir)
			return nil, fmt.Errorf("bench: redis-server exited at start: %s", log)
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, errors.New("bench: redis-server did not answer PING within 10s")
		}
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("bench: finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// URL returns redis://Addr.
func (s *RedisServer) URL() string { return "redis://" + s.Addr }

// Stop kills the server and removes its directory.
func (s *RedisServer) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
	os.RemoveAll(s.dir)
}
