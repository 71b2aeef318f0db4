package delayq

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/testwait"
)

// A job's lease is renewed whatever the consuming Client's limits: a job whose TTR is below the
// Worker's Client's MinTTR (it was enqueued through a Client with other limits) keeps its
// lease while its handler runs longer than that TTR.
func TestWorkerRenewsLeasesBelowItsMinTTR(t *testing.T) {
	t.Parallel()
	producer, rdb := newTestClient(t, Config{})
	consumer := newClientOn(t, rdb, Config{Limits: Limits{MinTTR: time.Second}})
	var calls atomic.Int32
	done := make(chan struct{})
	startWorker(t, consumer, WorkerConfig{}, map[string]Handler{
		"t": func(ctx context.Context, j *Job) error {
			if calls.Add(1) == 1 {
				time.Sleep(800 * time.Millisecond) // four TTRs: only renewal keeps the lease
				close(done)
			}
			return nil
		},
	})
	mustEnqueue(t, producer, "t", Spec{ID: "short", TTR: 200 * time.Millisecond})
	<-done
	testwait.For(t, 20*time.Second, "the job to be acked", func() bool { _, err := producer.Get(testContext(t), "t", "short"); return errors.Is(err, ErrNotFound) })
	if n := calls.Load(); n != 1 {
		t.Errorf("handler ran %d times: the lease was not renewed", n)
	}
}
