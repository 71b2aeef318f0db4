//go:build unix

package redisproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/childproc"
)

// ClusterBusOffset is the distance between a Cluster node's port and its cluster bus port.
const ClusterBusOffset = 10000

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// ClusterArgs returns the redis-server arguments that make a server a Redis Cluster node that
// keeps its view of the cluster in the file nodesConf. Its cluster bus listens on its port plus
// ClusterBusOffset. A node that stops answering is marked failing after 2 s instead of the
// default 15 s, so that a failover starts soon.
func ClusterArgs(nodesConf string) []string {
	return []string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", nodesConf,
		"--cluster-node-timeout", "2000",
	}
}

// CreateCluster joins the empty cluster nodes at addrs into one Redis Cluster and waits until
// every node reports cluster_state:ok with all 16384 slots covered, knows every other node in
// its final role and lists every node in CLUSTER SLOTS, and every replica has finished its
// initial sync. The first len(addrs)/(1+replicasPerPrimary) nodes become the primaries.
//
// Three primaries or more are joined by `redis-cli --cluster create` (which must be on PATH).
// One or two primaries, which redis-cli refuses, may not have replicas: each is given an equal
// range of slots and the nodes are introduced to each other with CLUSTER MEET.
// ctx bounds the whole of it.
func CreateCluster(ctx context.Context, addrs []string, replicasPerPrimary int) error {
	if replicasPerPrimary < 0 {
		return fmt.Errorf("redisproc: negative replicas per primary %d", replicasPerPrimary)
	}
	if len(addrs) == 0 || len(addrs)%(1+replicasPerPrimary) != 0 {
		return fmt.Errorf("redisproc: %d nodes do not make primaries with %d replicas each", len(addrs), replicasPerPrimary)
	}
	primaries := len(addrs) / (1 + replicasPerPrimary)
	var err error
	switch {
	case primaries >= 3:
		err = createWithCLI(ctx, addrs, replicasPerPrimary)
	case replicasPerPrimary == 0:
		err = assignSlots(ctx, addrs)
	default:
		return fmt.Errorf("redisproc: a cluster of %d primaries cannot have replicas here: redis-cli creates them for 3 primaries or more", primaries)
	}
	if err != nil {
		return err
	}
	if err := WaitCluster(ctx, addrs, primaries, len(addrs)-primaries); err != nil {
		return fmt.Errorf("redisproc: cluster %v: %w", addrs, err)
	}
	return nil
}

// createWithCLI runs `redis-cli --cluster create`.
func createWithCLI(ctx context.Context, addrs []string, replicasPerPrimary int) error {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return fmt.Errorf("redisproc: redis-cli not found on PATH (Debian: apt-get install redis-tools): %w", err)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicasPerPrimary), "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("redisproc: redis-cli %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// assignSlots makes the nodes at addrs primaries of equal ranges of slots, each with its own
// config epoch, and introduces them to the first node, as redis-cli does for three or more.
func assignSlots(ctx context.Context, addrs []string) error {
	host, port, err := net.SplitHostPort(addrs[0])
	if err != nil {
		return fmt.Errorf("redisproc: %w", err)
	}
	for i, addr := range addrs {
		lo := i * clusterSlots / len(addrs)
		hi := (i+1)*clusterSlots/len(addrs) - 1
		err := withControlClient(addr, func(c *redis.Client) error {
			if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
				return fmt.Errorf("CLUSTER ADDSLOTSRANGE %d %d: %w", lo, hi, err)
			}
			if err := c.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
				return fmt.Errorf("CLUSTER SET-CONFIG-EPOCH %d: %w", i+1, err)
			}
			if i == 0 {
				return nil
			}
			return c.ClusterMeet(ctx, host, port).Err()
		})
		if err != nil {
			return fmt.Errorf("redisproc: %s: %w", addr, err)
		}
	}
	return nil
}

// withControlClient runs f with a client for the node's control traffic: one connection, short
// timeouts, no retries and no CLIENT SETINFO, so that every probe answers or fails at once.
func withControlClient(addr string, f func(*redis.Client) error) error {
	c := redis.NewClient(&redis.Options{
		Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	})
	defer c.Close()
	return f(c)
}

// WaitCluster waits until every node at addrs sees a healthy cluster of primaries primaries
// (each holding slots) and replicas replicas, as CreateCluster describes, or ctx ends.
func WaitCluster(ctx context.Context, addrs []string, primaries, replicas int) error {
	return childproc.Poll(ctx, 10*time.Millisecond, func(ctx context.Context) error {
		errs := make([]error, len(addrs))
		var wg sync.WaitGroup
		for i, addr := range addrs {
			wg.Go(func() {
				errs[i] = withControlClient(addr, func(c *redis.Client) error {
					return checkClusterNode(ctx, c, primaries, replicas)
				})
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	})
}

// checkClusterNode reports whether the node c talks to sees a healthy cluster with the expected
// numbers of primaries and replicas.
func checkClusterNode(ctx context.Context, c *redis.Client, primaries, replicas int) error {
	addr := c.Options().Addr
	info, err := c.ClusterInfo(ctx).Result()
	if err != nil {
		return fmt.Errorf("%s: CLUSTER INFO: %w", addr, err)
	}
	want := map[string]string{
		"cluster_state":          "ok",
		"cluster_slots_assigned": strconv.Itoa(clusterSlots),
		"cluster_slots_ok":       strconv.Itoa(clusterSlots),
		"cluster_known_nodes":    strconv.Itoa(primaries + replicas),
	}
	for k, v := range want {
		if got, _ := infoField(info, k); got != v {
			return fmt.Errorf("%s: CLUSTER INFO %s is %q, want %q", addr, k, got, v)
		}
	}

	nodes, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		return fmt.Errorf("%s: CLUSTER NODES: %w", addr, err)
	}
	var masters, slaves int
	for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return fmt.Errorf("%s: malformed CLUSTER NODES line %q", addr, line)
		}
		flags := f[2]
		for _, bad := range []string{"fail", "handshake", "noaddr"} {
			if strings.Contains(flags, bad) {
				return fmt.Errorf("%s: CLUSTER NODES: %q", addr, line)
			}
		}
		if f[7] != "connected" {
			return fmt.Errorf("%s: CLUSTER NODES: %q", addr, line)
		}
		switch {
		case strings.Contains(flags, "master") && len(f) > 8:
			masters++
		case strings.Contains(flags, "slave"):
			slaves++
		}
	}
	if masters != primaries || slaves != replicas {
		return fmt.Errorf("%s: sees %d primaries with slots and %d replicas, want %d and %d", addr, masters, slaves, primaries, replicas)
	}

	// A node leaves a replica out of CLUSTER SLOTS (and so clients do not
	// know it) until it has seen a non-zero replication offset for it.
	//lint:ignore SA1019 CLUSTER SLOTS is what go-redis builds its slot map from
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		return fmt.Errorf("%s: CLUSTER SLOTS: %w", addr, err)
	}
	listed := map[string]bool{}
	for _, s := range slots {
		for _, n := range s.Nodes {
			listed[n.Addr] = true
		}
	}
	if len(listed) != primaries+replicas {
		return fmt.Errorf("%s: CLUSTER SLOTS lists %d nodes, want %d", addr, len(listed), primaries+replicas)
	}

	repl, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return fmt.Errorf("%s: INFO replication: %w", addr, err)
	}
	if role, _ := infoField(repl, "role"); role == "slave" {
		return ReplicaSynced(addr, repl)
	}
	return nil
}

// ReplicaSynced checks the INFO replication text of the replica at addr for a finished sync.
func ReplicaSynced(addr, replication string) error {
	if v, _ := infoField(replication, "master_link_status"); v != "up" {
		return fmt.Errorf("%s: master_link_status is %q", addr, v)
	}
	if v, _ := infoField(replication, "master_sync_in_progress"); v != "0" {
		return fmt.Errorf("%s: master_sync_in_progress is %q", addr, v)
	}
	return nil
}

// infoField returns the value of field in INFO-style "field:value" lines.
func infoField(info, field string) (string, bool) {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v, true
		}
	}
	return "", false
}
