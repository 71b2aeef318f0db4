package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/testwait"
)

// clusterTimeout bounds `redis-cli --cluster create` and, separately, the
// wait for the cluster to settle afterwards.
const clusterTimeout = 30 * time.Second

// Cluster is a Redis Cluster of redis-server processes.
type Cluster struct {
	// Nodes are all nodes of the cluster in the order they were given to
	// `redis-cli --cluster create`: initially the first primaries nodes are
	// the primaries and the rest their replicas.
	Nodes []*Server
}

// NewCluster starts primaries*(1+replicasPerPrimary) cluster-enabled
// servers, joins them with `redis-cli --cluster create` (primaries must be
// at least 3) and waits until every node reports cluster_state:ok with all
// 16384 slots covered, knows every other node in its final role and lists
// every node in CLUSTER SLOTS, and every replica has finished its initial
// sync. The nodes are killed when the test ends.
func NewCluster(t testing.TB, primaries, replicasPerPrimary int) *Cluster {
	t.Helper()
	if primaries < 3 {
		t.Fatalf("redistest: NewCluster: Redis Cluster needs at least 3 primaries, got %d", primaries)
	}
	if replicasPerPrimary < 0 {
		t.Fatalf("redistest: NewCluster: negative replicasPerPrimary %d", replicasPerPrimary)
	}
	cli := lookBin(t, "redis-cli")
	lookBin(t, "redis-server")

	c := &Cluster{}
	n := primaries * (1 + replicasPerPrimary)
	for i := 0; i < n; i++ {
		c.Nodes = append(c.Nodes, start(t, config{cluster: true}))
	}

	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicasPerPrimary), "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}

	err := testwait.Until(clusterTimeout, func() error {
		for _, node := range c.Nodes {
			if err := checkClusterNode(node.Addr, primaries, primaries*replicasPerPrimary); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("redistest: cluster %v: %v", c.Addrs(), err)
	}
	return c
}

// checkClusterNode reports whether the node at addr sees a healthy cluster
// with the expected numbers of primaries and replicas.
func checkClusterNode(addr string, primaries, replicas int) error {
	info, err := doString(addr, probeTimeout, "CLUSTER", "INFO")
	if err != nil {
		return fmt.Errorf("%s: CLUSTER INFO: %w", addr, err)
	}
	want := map[string]string{
		"cluster_state":          "ok",
		"cluster_slots_assigned": "16384",
		"cluster_slots_ok":       "16384",
		"cluster_known_nodes":    strconv.Itoa(primaries + replicas),
	}
	for k, v := range want {
		if got, _ := infoField(info, k); got != v {
			return fmt.Errorf("%s: CLUSTER INFO %s is %q, want %q", addr, k, got, v)
		}
	}

	nodes, err := doString(addr, probeTimeout, "CLUSTER", "NODES")
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
	r, err := do(addr, probeTimeout, "CLUSTER", "SLOTS")
	if err != nil {
		return fmt.Errorf("%s: CLUSTER SLOTS: %w", addr, err)
	}
	listed := map[string]bool{}
	ranges, _ := r.([]any)
	for _, rng := range ranges {
		parts, _ := rng.([]any)
		for _, p := range parts[min(2, len(parts)):] {
			if n, ok := p.([]any); ok && len(n) >= 2 {
				listed[fmt.Sprint(n[0], ":", n[1])] = true
			}
		}
	}
	if len(listed) != primaries+replicas {
		return fmt.Errorf("%s: CLUSTER SLOTS lists %d nodes, want %d", addr, len(listed), primaries+replicas)
	}

	repl, err := doString(addr, probeTimeout, "INFO", "replication")
	if err != nil {
		return fmt.Errorf("%s: INFO replication: %w", addr, err)
	}
	if role, _ := infoField(repl, "role"); role == "slave" {
		if err := replicaSynced(addr, repl); err != nil {
			return err
		}
	}
	return nil
}

// replicaSynced checks INFO replication of a replica for a finished sync.
func replicaSynced(addr, repl string) error {
	if v, _ := infoField(repl, "master_link_status"); v != "up" {
		return fmt.Errorf("%s: master_link_status is %q", addr, v)
	}
	if v, _ := infoField(repl, "master_sync_in_progress"); v != "0" {
		return fmt.Errorf("%s: master_sync_in_progress is %q", addr, v)
	}
	return nil
}

// Addrs returns the addresses of all nodes, in the order of Nodes.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr
	}
	return addrs
}

// Client returns a new go-redis cluster client seeded with all nodes; it is
// closed when the test ends.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}
