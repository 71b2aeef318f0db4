package delayq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// A Worker's acks of jobs on live shards go through while its reserve call to a shard that
// does not answer hangs: they used to wait for the next reserve call, after the hung one.
func TestWorkerAcksDoNotWaitForAHungShard(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t, 3, 0)
	rdb := cluster.Client(t)
	c := newClientOn(t, rdb, Config{RecheckInterval: time.Minute})
	ctx := testContext(t)
	const topic = "orders"

	// shardOf returns the address of the node holding job id's partition.
	shardOf := func(id string) string {
		key := c.store.Partition(topic, keys.PartitionOf(id, 16)).Jobs()
		node, err := rdb.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return node.Options().Addr
	}
	hung := cluster.Nodes[0]
	var good []string
	victim := ""
	for i := 0; len(good) < 8 || victim == ""; i++ {
		id := fmt.Sprint("job-", i)
		if shardOf(id) == hung.Addr {
			if victim == "" {
				victim = id
			}
		} else if len(good) < 8 {
			good = append(good, id)
		}
	}

	var mu sync.Mutex
	handled := map[string]time.Time{}
	release := make(chan struct{})
	startWorker(t, c, WorkerConfig{Concurrency: 16}, map[string]Handler{topic: func(ctx context.Context, j *Job) error {
		<-release // the handlers finish once the shard hangs
		mu.Lock()
		handled[j.ID] = time.Now()
		mu.Unlock()
		return nil
	}})
	// A job on the shard about to hang, due soon: the Worker's reserve call then goes there.
	victimDue := time.Now().Add(1500 * time.Millisecond)
	mustEnqueue(t, c, topic, Spec{ID: victim, RunAt: victimDue})
	for _, id := range good {
		mustEnqueue(t, c, topic, Spec{ID: id, TTR: time.Minute})
	}
	testwait.For(t, 20*time.Second, "the jobs of the live shards to be leased", func() bool {
		for _, id := range good {
			if j, err := c.Get(ctx, topic, id); err != nil || j.State != StateReserved {
				return false
			}
		}
		return true
	})
	if time.Until(victimDue) < 300*time.Millisecond {
		t.Skip("the machine is too slow for this scenario's timing")
	}
	hung.Stop(t)
	t.Cleanup(func() { hung.Cont(t) })
	// Sleep past the victim's due time: the reserve call to the stopped shard is then under way
	// (nothing outside the Worker shows the call).
	time.Sleep(time.Until(victimDue) + 300*time.Millisecond)
	close(release)

	testwait.For(t, 20*time.Second, "the handlers to finish", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) == len(good)
	})
	finished := time.Now()
	testwait.For(t, 20*time.Second, "the acks of the live shards' jobs", func() bool {
		for _, id := range good {
			if _, err := c.Get(ctx, topic, id); !errors.Is(err, ErrNotFound) {
				return false
			}
		}
		return true
	})
	// go-redis gives up on the stopped shard after its 3 s read timeout at the earliest.
	if took := time.Since(finished); took > 1500*time.Millisecond {
		t.Errorf("the acks took %v after the handlers finished: they waited for the hung reserve call", took)
	}
}
