package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redisproc"
)

// RedisServer is a temporary redis-server child process on a loopback port, with Redis's
// default settings (hz 10) and no persistence, for a benchmark to own and flush.
type RedisServer struct {
	// Addr is the server's 127.0.0.1:port address.
	Addr string

	proc *redisproc.Process
	dir  string
}

// StartRedis starts redis-server (found on PATH) on a free loopback port and waits until it
// answers PING. extraArgs are appended to its command line. Stop ends it.
func StartRedis(ctx context.Context, extraArgs ...string) (*RedisServer, error) {
	bin, err := redisproc.Binary()
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
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
	// The kernel kills the server should the benchmark die without stopping it.
	p, err := redisproc.Start(redisproc.Options{Bin: bin, Args: args, DeathSignal: syscall.SIGKILL})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: %w", err)
	}
	s := &RedisServer{Addr: fmt.Sprintf("127.0.0.1:%d", port), proc: p, dir: dir}
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = p.WaitReady(wctx, 10*time.Millisecond, redisproc.PingReady(rdb))
	if err != nil {
		log := redisproc.LogTail(filepath.Join(dir, "redis.log"), 30)
		s.Stop()
		return nil, fmt.Errorf("bench: %w; end of redis.log:\n%s", err, log)
	}
	return s, nil
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
	_ = s.proc.Kill(time.Minute)
	os.RemoveAll(s.dir)
}
