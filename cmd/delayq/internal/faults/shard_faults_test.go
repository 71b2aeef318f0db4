//go:build faults

package faults_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/faults"
	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/redistest"
)

// Scenario 16: one primary of a 3-shard Cluster hangs (SIGSTOP) for 6 s under load; the others
// serve on (cluster-require-full-coverage no). Batches spanning every shard half succeed: each
// job gets its own outcome, so the jobs of the live shards are confirmed while those of the hung
// one fail (or stay unconfirmed): no job of a live shard is reported failed and nothing
// confirmed is lost.
func TestShardDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := redistest.NewCluster(t, 3, 0)
	for _, node := range c.Nodes {
		if _, err := do(ctx, node.Addr, "CONFIG", "SET", "cluster-require-full-coverage", "no"); err != nil {
			t.Fatal(err)
		}
	}
	rdb := c.Client(t)
	// Calls to the hung shard time out after 500 ms (go-redis tries a pipeline 4 times: a batch
	// touching the hung shard answers after about 3 s); the agents go on with the live ones.
	h := newHarness(t, "redis+cluster://"+strings.Join(c.Addrs(), ",")+"?read_timeout=500ms&write_timeout=500ms&dial_timeout=500ms", rdb, delayq.Config{})
	n := scale(8000, 80000)
	producer, worker := h.load("h", n, 16)

	parts, err := rdb.HGet(ctx, keys.Topics(h.ns), h.topic).Int()
	if err != nil {
		t.Fatal(err)
	}
	hung := c.Nodes[0]
	onHung := map[int]bool{}
	for p := range parts {
		node, err := rdb.MasterForKey(ctx, keys.For(h.ns, h.topic, p).Jobs())
		if err != nil {
			t.Fatal(err)
		}
		onHung[p] = node.Options().Addr == hung.Addr
	}

	start := time.Now().UnixMilli()
	hung.Stop(t)
	time.Sleep(6 * time.Second) // the fault's length, not a wait for a goroutine
	hung.Cont(t)
	end := time.Now().UnixMilli()
	rec := h.recovery(end, producer, worker)
	h.finished(producer, 3*time.Minute)

	// Each call's outcome, job by job: a batch is partial when some of its jobs were confirmed
	// and others failed.
	confirmed, failedLive, failedHung, partial := 0, 0, 0, 0
	outcome := map[string]bool{}
	for _, e := range producer.events() {
		switch e.Kind {
		case faults.Enqueued:
			outcome[e.ID] = true
			if e.T >= start && e.T <= end {
				confirmed++
			}
		case faults.EnqueueErr:
			ids := e.IDs
			if e.ID != "" {
				ids = []string{e.ID}
			}
			for _, id := range ids {
				outcome[id] = false
				if onHung[keys.PartitionOf(id, parts)] {
					failedHung++
				} else {
					failedLive++
				}
			}
		}
	}
	for _, e := range producer.events() {
		if e.Kind != faults.Send || e.T < start || e.T > end {
			continue
		}
		ok, failed := 0, 0
		for _, id := range e.IDs {
			if done, seen := outcome[id]; seen && done {
				ok++
			} else if seen {
				failed++
			}
		}
		if ok > 0 && failed > 0 {
			partial++
		}
	}
	h.drain(3*time.Minute, 0)
	r := h.check(faults.Rules{Faults: []faults.Window{{Name: "shard hung", Start: start, End: end}}}, false)
	if failedHung == 0 || partial == 0 {
		t.Errorf("the hung shard failed %d jobs in %d partial batches: the fault hit nothing", failedHung, partial)
	}
	if failedLive > 0 {
		t.Errorf("%d jobs of live shards were reported failed with the hung shard's calls", failedLive)
	}
	if confirmed == 0 {
		t.Errorf("no job was confirmed while one shard hung: the live shards stopped too")
	}
	record(t, figures(r, map[string]any{
		"hung_ms": end - start, "recovery_ms": rec.Milliseconds(), "partial_batches": partial,
		"failed_on_hung_shard": failedHung, "failed_on_live_shards": failedLive,
		"confirmed_while_hung": confirmed,
	}))
}
