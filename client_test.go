package delayq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

func TestNewWarnsAboutSettingsThatLoseJobs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts []redistest.Option
		want []string
	}{
		{"no persistence", nil, []string{"neither AOF nor RDB"}},
		{"eviction", []redistest.Option{redistest.WithAppendOnly("everysec"), redistest.WithArgs("--maxmemory-policy", "allkeys-lru")}, []string{"maxmemory-policy is not noeviction"}},
		{"safe", []redistest.Option{redistest.WithAppendOnly("always")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			rdb := redistest.Standalone(t, tt.opts...).Client(t)
			newClientOn(t, rdb, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			for _, w := range tt.want {
				if !strings.Contains(logs.String(), w) {
					t.Errorf("logs %q lack %q", logs.String(), w)
				}
			}
			if tt.want == nil && logs.Len() > 0 {
				t.Errorf("warnings for a safe server: %s", logs.String())
			}
		})
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t).Client(t)
	for _, cfg := range []Config{
		{Namespace: "a{b}"}, {Namespace: "has space"}, {Partitions: -1}, {Partitions: 1025},
		{PollInterval: -1}, {RecheckInterval: -1}, {BulkLimit: -5},
	} {
		if _, err := New(testContext(t), rdb, cfg); err == nil {
			t.Errorf("New(%+v) accepted a bad config", cfg)
		}
	}
	if _, err := New(testContext(t), nil, Config{}); err == nil {
		t.Error("New(nil client) succeeded")
	}
}

func TestCloseWhileConsumersWait(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, Config{Partitions: 3})
	ctx := testContext(t)
	done := make(chan error, 8)
	for i := range 8 {
		go func() {
			_, err := c.Reserve(ctx, fmt.Sprint("t", i), ReserveOptions{Wait: 200 * time.Millisecond})
			done <- err
		}()
	}
	c.Close()
	for range 8 {
		if err := <-done; err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Reserve racing Close = %v", err)
		}
	}
	if _, err := c.Reserve(ctx, "t", ReserveOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Reserve after Close = %v, want ErrClosed", err)
	}
}

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
