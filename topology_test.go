package delayq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/store"
	"github.com/delayq/delayq/internal/testwait"
)

// The same behaviour, checked on each kind of deployment delayq supports.

func TestStandalone(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t).Client(t)
	checkDeployment(t, rdb, 4)
}

func TestCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t, 3, 0)
	rdb := cluster.Client(t)
	checkDeployment(t, rdb, 0)

	// One topic's partitions spread over every shard.
	ctx := testContext(t)
	c := newClientOn(t, rdb, Config{})
	specs := make([]Spec, 100)
	for i := range specs {
		specs[i].Delay = time.Hour
	}
	if _, err := c.EnqueueBatch(ctx, "spread-out", specs); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	shards := 0
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		keys, err := node.Keys(ctx, "delayq:{spread-out#*}:jobs").Result()
		mu.Lock()
		defer mu.Unlock()
		if len(keys) > 0 {
			shards++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if shards != 3 {
		t.Errorf("topic 'spread-out' lives on %d of 3 shards", shards)
	}
}

func TestSentinel(t *testing.T) {
	t.Parallel()
	s := redistest.NewSentinel(t)
	checkDeployment(t, s.Client(t), 4)
}

// checkDeployment runs the library's main paths against rdb with the given partition count
// (0: the default for the deployment).
func checkDeployment(t *testing.T, rdb redis.UniversalClient, partitions int) {
	c := newClientOn(t, rdb, Config{Partitions: partitions, RecheckInterval: time.Minute})
	ctx := testContext(t)

	t.Run("lifecycle", func(t *testing.T) {
		specs := make([]Spec, 100)
		for i := range specs {
			specs[i] = Spec{ID: fmt.Sprint("job-", i), Body: []byte(fmt.Sprint(i))}
		}
		specs[7].Delay = time.Hour
		res, err := c.EnqueueBatch(ctx, "spread", specs)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		if err := c.Cancel(ctx, "spread", "job-7"); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for len(seen) < 99 {
			jobs, err := c.Reserve(ctx, "spread", ReserveOptions{Max: 30, Wait: time.Second})
			if err != nil || len(jobs) == 0 {
				t.Fatalf("Reserve after %d jobs: %d jobs, %v", len(seen), len(jobs), err)
			}
			for _, j := range jobs {
				if seen[j.ID] || j.ID == "job-7" {
					t.Fatalf("job %s handed out twice or after its cancel", j.ID)
				}
				seen[j.ID] = true
				if err := c.Ack(ctx, Lease{Topic: "spread", ID: j.ID, Token: j.LeaseToken}); err != nil {
					t.Fatal(err)
				}
			}
		}
		s, err := c.Stats(ctx, "spread")
		if err != nil || s.Ready+s.Delayed+s.Reserved+s.Dead != 0 {
			t.Fatalf("stats after draining: %+v, %v", s, err)
		}
	})

	t.Run("ids stay taken and jobs are replaced in their partitions", func(t *testing.T) {
		specs := make([]Spec, 40)
		for i := range specs {
			specs[i] = Spec{ID: fmt.Sprint("taken-", i), Body: []byte("a"), UniqueFor: time.Hour}
		}
		if _, err := c.EnqueueBatch(ctx, "taken", specs); err != nil {
			t.Fatal(err)
		}
		for acked := 0; acked < len(specs); {
			jobs, err := c.Reserve(ctx, "taken", ReserveOptions{Max: 40, Wait: time.Second})
			if err != nil || len(jobs) == 0 {
				t.Fatalf("Reserve after %d jobs: %d jobs, %v", acked, len(jobs), err)
			}
			for _, j := range jobs {
				if err := c.Ack(ctx, j.Lease()); err != nil {
					t.Fatal(err)
				}
				acked++
			}
		}
		replaced := make([]Spec, len(specs))
		for i := range specs {
			specs[i].Body = []byte("b")
			replaced[i] = Spec{ID: fmt.Sprint("debounced-", i), Delay: time.Hour, OnConflict: ConflictReplace}
		}
		res, err := c.EnqueueBatch(ctx, "taken", append(specs, replaced...))
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res[:len(specs)] {
			if !errors.Is(r.Err, ErrDone) {
				t.Fatalf("enqueue of acked job %d = %v, want ErrDone", i, r.Err)
			}
		}
		res, err = c.EnqueueBatch(ctx, "taken", replaced)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.Err != nil || r.Job.Replaces != 1 {
				t.Fatalf("replace %d = %+v, %v; want the job, replaced once", i, r.Job, r.Err)
			}
		}
	})

	t.Run("notice wakes a waiting consumer", func(t *testing.T) {
		producer := newClientOn(t, rdb, Config{Partitions: partitions})
		waitHearsNewTopics(t, c)
		got := make(chan []*Job, 1)
		go func() {
			jobs, _ := c.Reserve(ctx, "wake", ReserveOptions{Wait: 30 * time.Second})
			got <- jobs
		}()
		waitAwaiting(t, c, "wake", store.LanePull)
		mustEnqueue(t, producer, "wake", Spec{ID: "x", Delay: 50 * time.Millisecond})
		select {
		case jobs := <-got:
			if len(jobs) != 1 {
				t.Fatalf("got %d jobs", len(jobs))
			}
		case <-time.After(15 * time.Second):
			t.Fatal("no wake-up: with a one-minute recheck only a notice could have woken the consumer")
		}
	})

	t.Run("concurrent producers and workers", func(t *testing.T) {
		checkExactlyOnce(t, c, rdb, partitions, 4, 2500, 3)
	})
}

// checkExactlyOnce enqueues producers×perProducer jobs from concurrent producers while workers
// Workers consume them, and checks that every job is handled exactly once.
func checkExactlyOnce(t *testing.T, c *Client, rdb redis.UniversalClient, partitions, producers, perProducer, workers int) {
	ctx := testContext(t)
	total := producers * perProducer
	var mu sync.Mutex
	handled := make(map[string]int, total)
	done := make(chan struct{})
	for range workers {
		wc := newClientOn(t, rdb, Config{Partitions: partitions})
		startWorker(t, wc, WorkerConfig{Concurrency: 8}, map[string]Handler{
			"load": func(ctx context.Context, j *Job) error {
				mu.Lock()
				defer mu.Unlock()
				handled[j.ID]++
				if len(handled) == total {
					select {
					case <-done:
					default:
						close(done)
					}
				}
				return nil
			},
		})
	}
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perProducer; i += 100 {
				specs := make([]Spec, 0, 100)
				for k := i; k < min(i+100, perProducer); k++ {
					specs = append(specs, Spec{ID: fmt.Sprintf("p%d-%d", p, k), Delay: time.Duration(k%50) * time.Millisecond})
				}
				if k := i / 100; k%2 == 1 { // half one by one, half in batches
					for _, s := range specs {
						if _, err := c.Enqueue(ctx, "load", s); err != nil {
							t.Error(err)
							return
						}
					}
					continue
				}
				res, err := c.EnqueueBatch(ctx, "load", specs)
				if err != nil {
					t.Error(err)
					return
				}
				for _, r := range res {
					if r.Err != nil {
						t.Error(r.Err)
					}
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		mu.Lock()
		t.Fatalf("handled %d of %d jobs", len(handled), total)
	}
	testwait.For(t, 20*time.Second, "every job to be acked", func() bool {
		s, err := c.Stats(ctx, "load")
		return err == nil && s.Ready+s.Delayed+s.Reserved+s.Dead == 0
	})
	mu.Lock()
	defer mu.Unlock()
	for id, n := range handled {
		if n != 1 {
			t.Errorf("job %s handled %d times", id, n)
		}
	}
	if len(handled) != total {
		t.Errorf("handled %d distinct jobs, want %d", len(handled), total)
	}
}
