package delayq

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redistest"
)

// A Reserve whose context ends while its script waits in a paused Redis (SIGSTOP) leases
// nothing to nobody: whether the script runs before or after the Client gives up, the job ends
// up ready again with no attempt counted, and Reserve answers ctx's error.
func TestReserveEndedMidCallPutsJobsBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// honour makes go-redis end the call at ctx's deadline (the reply is then lost);
		// otherwise it reads the reply once Redis runs again, after ctx has ended.
		honour bool
		end    func(context.Context) (context.Context, context.CancelFunc)
	}{
		{"cancelled", false, context.WithCancel},
		{"deadline", true, func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 150*time.Millisecond)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Standalone(t)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: tc.honour})
			t.Cleanup(func() { rdb.Close() })
			c := newClientOn(t, rdb, Config{})
			mustEnqueue(t, c, "t", Spec{ID: "later", Delay: time.Hour})
			if jobs, err := c.Reserve(testContext(t), "t", ReserveOptions{}); err != nil || len(jobs) != 0 {
				t.Fatalf("first reserve: %v, %v", jobs, err)
			}
			mustEnqueue(t, c, "t", Spec{ID: "a", NoRetries: true})

			srv.Stop(t)
			ctx, cancel := tc.end(testContext(t))
			defer cancel()
			type result struct {
				jobs []*Job
				err  error
			}
			done := make(chan result, 1)
			go func() {
				jobs, err := c.Reserve(ctx, "t", ReserveOptions{Max: 5})
				done <- result{jobs, err}
			}()
			time.Sleep(200 * time.Millisecond)
			cancel()
			srv.Cont(t)
			r := <-done
			if len(r.jobs) != 0 || !errors.Is(r.err, ctx.Err()) {
				t.Fatalf("Reserve = %d jobs, %v; want none and %v", len(r.jobs), r.err, ctx.Err())
			}
			waitFor(t, func() bool {
				j, err := c.Get(testContext(t), "t", "a")
				return err == nil && j.State == StateReady && j.Attempts == 0
			})
			j := reserveOne(t, c, "t", 0)
			if j.ID != "a" || j.Attempts != 1 {
				t.Fatalf("next reserve: %s attempt %d", j.ID, j.Attempts)
			}
		})
	}
}
