//go:build unix

// Package redisproc is what starting redis-server children (package childproc) needs of
// Redis: its binary, readiness, ports with their cluster bus ports, and Redis Cluster set-up.
// Unix only, as redis-server.
package redisproc

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/childproc"
)

// Binary returns the path of redis-server on PATH, or an error that says how to install it.
func Binary() (string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("redis-server not found on PATH (Debian: apt-get install redis-server): %w", err)
	}
	return bin, nil
}

// PingReady returns a ready function for WaitReady that holds once rdb answers PING, each
// try bounded to a second. A server still reading its data answers LOADING, an error.
func PingReady(rdb redis.Cmdable) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return rdb.Ping(ctx).Err()
	}
}

// ReservePort reserves a loopback port for a redis-server, with its cluster bus port
// (ClusterBusOffset above it) free too, until ReleasePort.
func ReservePort() (int, error) { return childproc.ReservePort(ClusterBusOffset) }

// ReleasePort releases a port of ReservePort; 0 is ignored.
func ReleasePort(port int) { childproc.ReleasePort(port) }
