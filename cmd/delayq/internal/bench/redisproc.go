package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/childproc"
	"github.com/delayq/delayq/internal/redisproc"
)

// RedisServer is a temporary redis-server child process on a loopback port, with Redis's
// default settings (hz 10) and no persistence, for a benchmark to own and flush.
type RedisServer struct {
	// Addr is the server's 127.0.0.1:port address.
	Addr string

	proc *childproc.Process
	dir  string
	port int // reserved with redisproc.ReservePort
}

// StartRedis starts redis-server (found on PATH) on a free loopback port and waits until it
// answers PING. extraArgs are appended to its command line. Stop ends it.
func StartRedis(ctx context.Context, extraArgs ...string) (*RedisServer, error) {
	return startRedisRetrying(ctx, false, extraArgs)
}

// startRedisRetrying starts a server, as a Cluster node when cluster is set, trying up to five
// ports in case another process takes the one picked before the server binds it.
func startRedisRetrying(ctx context.Context, cluster bool, extraArgs []string) (*RedisServer, error) {
	bin, err := redisproc.Binary()
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	var last error
	for range 5 {
		s, err := startRedis(ctx, bin, cluster, extraArgs)
		if err == nil {
			return s, nil
		}
		last = err
	}
	return nil, last
}

func startRedis(ctx context.Context, bin string, cluster bool, extraArgs []string) (*RedisServer, error) {
	port, err := redisproc.ReservePort()
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	dir, err := os.MkdirTemp("", "delayq-bench-redis-")
	if err != nil {
		redisproc.ReleasePort(port)
		return nil, fmt.Errorf("bench: %w", err)
	}
	args := []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir,
		"--logfile", filepath.Join(dir, "redis.log"),
	}
	if cluster {
		args = append(args, redisproc.ClusterArgs(filepath.Join(dir, "nodes.conf"))...)
	}
	args = append(args, extraArgs...)
	// The kernel kills the server should the benchmark die without stopping it.
	p, err := childproc.Start(childproc.Options{Bin: bin, Args: args, DeathSignal: syscall.SIGKILL})
	if err != nil {
		os.RemoveAll(dir)
		redisproc.ReleasePort(port)
		return nil, fmt.Errorf("bench: %w", err)
	}
	s := &RedisServer{Addr: fmt.Sprintf("127.0.0.1:%d", port), proc: p, dir: dir, port: port}
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = p.WaitReady(wctx, 10*time.Millisecond, redisproc.PingReady(rdb))
	if err != nil {
		log := childproc.LogTail(filepath.Join(dir, "redis.log"), 30)
		s.Stop()
		return nil, fmt.Errorf("bench: %w; end of redis.log:\n%s", err, log)
	}
	return s, nil
}

// URL returns redis://Addr.
func (s *RedisServer) URL() string { return "redis://" + s.Addr }

// Stop kills the server and removes its directory.
func (s *RedisServer) Stop() {
	_ = s.proc.Kill(time.Minute)
	os.RemoveAll(s.dir)
	redisproc.ReleasePort(s.port)
}

// RedisCluster is a temporary Redis Cluster of primaries without replicas, each a RedisServer.
type RedisCluster struct {
	Nodes []*RedisServer
}

// StartCluster starts primaries cluster nodes on free loopback ports and joins them into a
// Cluster (see redisproc.CreateCluster), waiting until every node sees all of it. Stop ends it.
func StartCluster(ctx context.Context, primaries int) (*RedisCluster, error) {
	c := &RedisCluster{}
	for range primaries {
		s, err := startRedisRetrying(ctx, true, nil)
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := redisproc.CreateCluster(ctx, c.Addrs(), 0); err != nil {
		c.Stop()
		return nil, fmt.Errorf("bench: %w", err)
	}
	return c, nil
}

// Addrs returns the nodes' addresses.
func (c *RedisCluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr
	}
	return addrs
}

// Stop kills every node and removes their directories.
func (c *RedisCluster) Stop() {
	for _, n := range c.Nodes {
		n.Stop()
	}
}
