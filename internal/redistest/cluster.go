package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redisproc"
)

// clusterTimeout bounds `redis-cli --cluster create` and the wait for the
// cluster to settle afterwards.
const clusterTimeout = 60 * time.Second

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
		t.Fatalf("redistest: NewCluster: want at least 3 primaries (for redis-cli --cluster create), got %d", primaries)
	}
	if replicasPerPrimary < 0 {
		t.Fatalf("redistest: NewCluster: negative replicasPerPrimary %d", replicasPerPrimary)
	}
	lookBin(t, "redis-cli")
	lookBin(t, "redis-server")

	c := &Cluster{}
	n := primaries * (1 + replicasPerPrimary)
	for i := 0; i < n; i++ {
		c.Nodes = append(c.Nodes, start(t, config{cluster: true}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := redisproc.CreateCluster(ctx, c.Addrs(), replicasPerPrimary); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return c
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
