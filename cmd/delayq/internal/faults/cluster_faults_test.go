//go:build faults

package faults_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/faults"
	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// Scenario 8: a Redis Cluster of 3 primaries with 3 replicas each, under load. A CLUSTER
// FAILOVER on a replica (the coordinated kind: the primary pauses its clients until the replica
// has caught up) loses nothing; neither does moving the slots of four of the topic's partitions
// to other primaries (SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE) while the clients
// follow MOVED and ASK and retry TRYAGAIN.
func TestCluster(t *testing.T) {
	for _, fault := range []string{"failover", "migrate"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			clusterScenario(t, fault)
		})
	}
}

func clusterScenario(t *testing.T, fault string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := redistest.NewCluster(t, 3, 3)
	h := newHarness(t, "redis+cluster://"+strings.Join(c.Addrs(), ","), c.Client(t), delayq.Config{})
	n := scale(10000, 100000)
	producer, worker := h.load("c", n, 15)
	extra := map[string]any{"fault": fault}
	start := time.Now().UnixMilli()
	switch fault {
	case "failover":
		var replica, primary string
		for _, node := range c.Nodes {
			if r, up := role(ctx, node.Addr); r == "slave" && up {
				replica = node.Addr
				break
			}
		}
		if replica == "" {
			t.Fatal("no replica in the cluster")
		}
		v, _ := do(ctx, replica, "INFO", "replication")
		primary = net.JoinHostPort(infoField(fmt.Sprint(v), "master_host"), infoField(fmt.Sprint(v), "master_port"))
		if _, err := do(ctx, replica, "CLUSTER", "FAILOVER"); err != nil {
			t.Fatalf("CLUSTER FAILOVER on %s: %v", replica, err)
		}
		testwait.For(h.t, time.Minute, "the replica to take over", func() bool {
			r, _ := role(ctx, replica)
			old, up := role(ctx, primary)
			return r == "master" && old == "slave" && up
		})
	case "migrate":
		moved := 0
		for part := range 4 {
			moved += migrateSlot(t, ctx, c, keys.For(h.ns, h.topic, part).Jobs())
		}
		extra["keys_moved"] = moved
	}
	end := time.Now().UnixMilli()
	rec := h.recovery(end, producer, worker)
	h.finished(producer, 3*time.Minute)
	h.drain(3*time.Minute, 0)
	r := h.check(faults.Rules{Faults: []faults.Window{{Name: fault, Start: start, End: end}}}, false)
	errs := 0
	for _, p := range []*agent{producer, worker} {
		for _, k := range []faults.Kind{faults.EnqueueErr, faults.AckErr, faults.Warn} {
			if c := p.count(k); c > 0 {
				errs += c
				extra["caller_error"] = lastErr(p, k)
			}
		}
	}
	extra["fault_ms"], extra["recovery_ms"], extra["caller_errors"] = end-start, rec.Milliseconds(), errs
	record(t, figures(r, extra))
}

// migrateSlot moves the slot of key from its primary to the next one, under whatever load
// runs, and returns how many keys it moved.
func migrateSlot(t *testing.T, ctx context.Context, c *redistest.Cluster, key string) int {
	t.Helper()
	rdb := c.Client(t)
	slot, err := rdb.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 CLUSTER SLOTS is what go-redis builds its slot map from
	slots, err := rdb.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var primaries []string
	src := ""
	for _, s := range slots {
		addr := s.Nodes[0].Addr
		if !containsStr(primaries, addr) {
			primaries = append(primaries, addr)
		}
		if int64(s.Start) <= slot && slot <= int64(s.End) {
			src = addr
		}
	}
	dst := ""
	for _, p := range primaries {
		if p != src {
			dst = p
			break
		}
	}
	id := func(addr string) string {
		v, err := do(ctx, addr, "CLUSTER", "MYID")
		if err != nil {
			t.Fatalf("CLUSTER MYID on %s: %v", addr, err)
		}
		return fmt.Sprint(v)
	}
	srcID, dstID := id(src), id(dst)
	must := func(addr string, args ...any) any {
		v, err := do(ctx, addr, args...)
		if err != nil {
			t.Fatalf("%v on %s: %v", args, addr, err)
		}
		return v
	}
	must(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID)
	must(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID)
	host, port, _ := net.SplitHostPort(dst)
	moved := 0
	for {
		v := must(src, "CLUSTER", "GETKEYSINSLOT", slot, 1000)
		ks, _ := v.([]any)
		if len(ks) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		args = append(args, ks...)
		if _, err := do(ctx, src, args...); err != nil && !strings.Contains(err.Error(), "NOKEY") {
			t.Fatalf("MIGRATE %d keys of slot %d: %v", len(ks), slot, err)
		}
		moved += len(ks)
	}
	must(dst, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
	must(src, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
	for _, p := range primaries {
		if p != src && p != dst {
			must(p, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
		}
	}
	return moved
}

func containsStr(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
