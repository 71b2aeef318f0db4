package delayq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// WaitReplicas: an enqueue succeeds only once enough replicas confirm its writes.
func TestWaitReplicas(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	primary := redistest.Standalone(t)
	replica := redistest.Standalone(t)
	rdb := primary.Client(t)
	_, port, _ := strings.Cut(primary.Addr, ":")
	rrdb := replica.Client(t)
	if err := rrdb.ReplicaOf(ctx, "127.0.0.1", port).Err(); err != nil {
		t.Fatal(err)
	}
	testwait.ForNil(t, 20*time.Second, "the replica to sync", func() error {
		info, err := rrdb.Info(ctx, "replication").Result()
		if err == nil && !strings.Contains(info, "master_link_status:up") {
			err = fmt.Errorf("not in sync:\n%s", info)
		}
		return err
	})

	one := newClientOn(t, rdb, Config{Namespace: "one", WaitReplicas: 1})
	if _, err := one.Enqueue(ctx, "t", Spec{ID: "a"}); err != nil {
		t.Fatalf("Enqueue confirmed by the replica: %v", err)
	}
	if _, err := one.EnqueueBatch(ctx, "t", []Spec{{ID: "b"}, {ID: "c"}}); err != nil {
		t.Fatalf("EnqueueBatch confirmed by the replica: %v", err)
	}
	if n, err := rrdb.HLen(ctx, one.store.Partition("t", 0).Jobs()).Result(); err != nil || n != 3 {
		t.Errorf("the replica holds %d jobs (%v), want 3", n, err)
	}

	two := newClientOn(t, rdb, Config{Namespace: "two", WaitReplicas: 2, WaitTimeout: 100 * time.Millisecond})
	_, err := two.Enqueue(ctx, "t", Spec{ID: "a"})
	if err == nil || !strings.Contains(err.Error(), "1 of 2 replicas") {
		t.Errorf("Enqueue with 1 replica of 2: %v, want an error naming the shortfall", err)
	}
}

func TestWaitReplicasConfig(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t).Client(t)
	for _, cfg := range []Config{{WaitReplicas: -1}, {WaitReplicas: 1, WaitTimeout: -time.Second}} {
		if _, err := New(context.Background(), rdb, cfg); !errors.Is(err, ErrInvalid) {
			t.Errorf("New(%+v) = %v, want ErrInvalid", cfg, err)
		}
	}
	cluster := redistest.NewCluster(t, 3, 0).Client(t)
	if _, err := New(context.Background(), cluster, Config{WaitReplicas: 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("New on a Cluster with WaitReplicas: %v, want ErrInvalid", err)
	}
}
