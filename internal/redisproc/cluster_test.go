//go:build unix

package redisproc

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/childproc"
)

// startClusterNode starts an empty cluster node on a reserved port and returns its address.
func startClusterNode(t *testing.T) string {
	t.Helper()
	port, err := ReservePort()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ReleasePort(port) })
	dir := t.TempDir()
	p, addr := startOn(t, port, dir, ClusterArgs(filepath.Join(dir, "nodes.conf"))...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitReady(ctx, 10*time.Millisecond, childproc.Accepts(addr)); err != nil {
		t.Fatal(err)
	}
	return addr
}

// CreateCluster makes a Cluster of one or two primaries, which redis-cli refuses, with every
// slot served.
func TestCreateClusterOfFewPrimaries(t *testing.T) {
	for _, primaries := range []int{1, 2} {
		t.Run(strconv.Itoa(primaries), func(t *testing.T) {
			t.Parallel()
			var addrs []string
			for range primaries {
				addrs = append(addrs, startClusterNode(t))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := CreateCluster(ctx, addrs, 0); err != nil {
				t.Fatal(err)
			}
			cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
			defer cc.Close()
			// Keys in many slots, all of them writable and on a primary of the cluster.
			owners := map[string]bool{}
			for i := range 50 {
				key := fmt.Sprintf("k%d", i)
				if err := cc.Set(ctx, key, i, 0).Err(); err != nil {
					t.Fatalf("SET %s: %v", key, err)
				}
				m, err := cc.MasterForKey(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				owners[m.Options().Addr] = true
			}
			if len(owners) != primaries {
				t.Errorf("keys on %d primaries %v, want %d", len(owners), owners, primaries)
			}
		})
	}
}

func TestCreateClusterRefusesReplicasOfFewPrimaries(t *testing.T) {
	err := CreateCluster(context.Background(), []string{"127.0.0.1:1", "127.0.0.1:2"}, 1)
	if err == nil {
		t.Fatal("CreateCluster of 1 primary with a replica succeeded")
	}
}

// ReservePort hands out ports whose cluster bus port is free too, never one twice until it is
// released.
func TestReservePort(t *testing.T) {
	seen := map[int]bool{}
	var ports []int
	for range 20 {
		p, err := ReservePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] || seen[p+ClusterBusOffset] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p], seen[p+ClusterBusOffset] = true, true
		ports = append(ports, p)
		if p+ClusterBusOffset > 65535 {
			t.Fatalf("port %d has no cluster bus port", p)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+ClusterBusOffset)))
		if err != nil {
			t.Fatalf("bus port of %d: %v", p, err)
		}
		l.Close()
	}
	for _, p := range ports {
		ReleasePort(p)
	}
}
