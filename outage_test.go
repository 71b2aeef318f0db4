package delayq

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redistest"
)

// The connections between a Worker and Redis all drop, and new ones are refused for 3 s, while
// its handlers finish: their acks are retried until they go through, so every job's handler
// runs once, no job goes dead (they allow no retry) and nothing is left reserved.
func TestWorkerAcksSurviveAConnectionOutage(t *testing.T) {
	t.Parallel()
	srv := redistest.Standalone(t)
	proxy := redistest.NewProxy(t, srv.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr()})
	t.Cleanup(func() { rdb.Close() })
	c := newClientOn(t, rdb, Config{})
	producer := newClientOn(t, srv.Client(t), Config{})
	ctx := testContext(t)

	const n = 40
	var mu sync.Mutex
	runs := map[string]int{}
	started := make(chan struct{}, n)
	finish := make(chan struct{})
	w := startWorker(t, c, WorkerConfig{Concurrency: n}, map[string]Handler{
		"t": func(ctx context.Context, j *Job) error {
			mu.Lock()
			runs[j.ID]++
			mu.Unlock()
			started <- struct{}{}
			<-finish
			return nil
		},
	})
	specs := make([]Spec, n)
	for i := range specs {
		specs[i] = Spec{ID: fmt.Sprint("j", i), TTR: 8 * time.Second, NoRetries: true}
	}
	if _, err := producer.EnqueueBatch(ctx, "t", specs); err != nil {
		t.Fatal(err)
	}
	for range n {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("the handlers did not all start")
		}
	}
	over := proxy.Outage(3 * time.Second)
	close(finish) // the handlers finish while Redis cannot be reached
	<-over
	waitFor(t, func() bool {
		s, err := producer.Stats(ctx, "t")
		return err == nil && s.Ready+s.Delayed+s.Reserved+s.Dead == 0
	})
	s, _ := producer.Stats(ctx, "t")
	if s.Dead != 0 || s.Reserved != 0 {
		t.Fatalf("after the outage: %+v", s)
	}
	stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := w.Stop(stopCtx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, k := range runs {
		if k != 1 {
			t.Errorf("handler of %s ran %d times", id, k)
		}
	}
	if len(runs) != n {
		t.Errorf("%d of %d jobs handled", len(runs), n)
	}
}
