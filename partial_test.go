package delayq

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/redistest"
)

// clusterWithAShardDown returns a Client on a 3-primary Cluster whose first primary has been
// killed, and tells, for a job id of topic, whether its partition lives on the dead shard.
func clusterWithAShardDown(t *testing.T, topic string) (*Client, func(id string) bool) {
	t.Helper()
	cluster := redistest.NewCluster(t, 3, 0)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: cluster.Addrs(), DialTimeout: 200 * time.Millisecond,
		ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: 1, MaxRedirects: 1,
	})
	t.Cleanup(func() { rdb.Close() })
	// The live shards keep serving once the cluster marks the dead one as failed.
	for _, node := range cluster.Nodes {
		if err := node.Client(t).ConfigSet(context.Background(), "cluster-require-full-coverage", "no").Err(); err != nil {
			t.Fatal(err)
		}
	}
	c := newClientOn(t, rdb, Config{})
	ctx := testContext(t)
	mustEnqueue(t, c, topic, Spec{ID: "before", Delay: time.Hour}) // the topic exists
	n, err := c.partitions(ctx, topic, false)
	if err != nil {
		t.Fatal(err)
	}
	dead := cluster.Nodes[0]
	onDead := map[int]bool{}
	for p := range n {
		node, err := rdb.MasterForKey(ctx, c.store.Partition(topic, p).Jobs())
		if err != nil {
			t.Fatal(err)
		}
		onDead[p] = node.Options().Addr == dead.Addr
	}
	dead.Kill(t)
	return c, func(id string) bool { return onDead[keys.PartitionOf(id, n)] }
}

// A batch whose partitions' calls partly fail reports each job's own outcome: the jobs of the
// live shards are stored, those of the dead one carry its error.
func TestBatchWithAShardDownIsPartial(t *testing.T) {
	t.Parallel()
	c, onDead := clusterWithAShardDown(t, "half")
	ctx := testContext(t)
	specs := make([]Spec, 60)
	for i := range specs {
		specs[i] = Spec{ID: fmt.Sprintf("j%d", i), Delay: time.Hour}
	}
	results, err := c.EnqueueBatch(ctx, "half", specs)
	if err != nil {
		t.Fatalf("EnqueueBatch: %v", err)
	}
	stored, failed := 0, 0
	for i, r := range results {
		id := specs[i].ID
		switch {
		case onDead(id) && r.Err == nil:
			t.Errorf("%s lives on the dead shard but was reported stored", id)
		case !onDead(id) && r.Err != nil:
			t.Errorf("%s lives on a live shard but was reported failed: %v", id, r.Err)
		case r.Err == nil:
			stored++
			if _, err := c.Get(ctx, "half", id); err != nil {
				t.Errorf("%s reported stored: Get = %v", id, err)
			}
		default:
			failed++
		}
	}
	if stored == 0 || failed == 0 {
		t.Fatalf("%d stored, %d failed: want both", stored, failed)
	}
}

// Concurrent Enqueue calls share round trips, but each sees only its own script's outcome.
func TestCoalescedEnqueuesWithAShardDown(t *testing.T) {
	t.Parallel()
	c, onDead := clusterWithAShardDown(t, "half")
	ctx := testContext(t)
	var wg sync.WaitGroup
	errs := make([]error, 60)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.Enqueue(ctx, "half", Spec{ID: fmt.Sprintf("j%d", i), Delay: time.Hour})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		id := fmt.Sprintf("j%d", i)
		if onDead(id) != (err != nil) {
			t.Errorf("%s: on the dead shard %v, Enqueue error %v", id, onDead(id), err)
		}
	}
}
