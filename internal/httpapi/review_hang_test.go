package httpapi

import (
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestReviewReadyzEndsInTimeWhenItsPingClientIgnoresDeadlines gives /readyz a Redis client of
// its own (Config.Redis) that does not end calls at their context's deadline, beside a store
// client that does: a paused Redis must still answer 503 within the readiness timeout.
func TestReviewReadyzEndsInTimeWhenItsPingClientIgnoresDeadlines(t *testing.T) {
	t.Parallel()
	var ping *redis.Client
	e := newEnv(t, func(c *Config) {
		ping = redis.NewClient(&redis.Options{Addr: c.Redis.(*redis.Client).Options().Addr})
		t.Cleanup(func() { _ = ping.Close() })
		c.Redis = ping
		c.RequestTimeout = 500 * time.Millisecond
	})
	e.call("GET", "/readyz", nil).want(t, http.StatusOK)
	e.redis.Stop(t)
	defer e.redis.Cont(t)
	start := time.Now()
	e.call("GET", "/readyz", nil).wantError(t, http.StatusServiceUnavailable, codeUnavailable)
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Errorf("GET /readyz took %v with a 500ms request timeout", took)
	}
}

// TestReviewOtherRoutesEndInTimeWhileRedisHangs sends the store routes that
// TestEveryRouteEndsInTimeWhileRedisHangs leaves out while the redis-server is paused.
func TestReviewOtherRoutesEndInTimeWhileRedisHangs(t *testing.T) {
	t.Parallel()
	for _, deadlines := range []bool{true, false} {
		t.Run(fmt.Sprintf("client ends calls at deadlines %v", deadlines), func(t *testing.T) {
			t.Parallel()
			e := newEnvOn(t, deadlines, func(c *Config) { c.RequestTimeout = 500 * time.Millisecond })
			e.enqueue("h", map[string]any{"id": "x"})
			e.redis.Stop(t)
			defer e.redis.Cont(t)
			for _, c := range []struct {
				method, path string
				body         any
			}{
				{"GET", "/readyz", nil},
				{"POST", "/v1/topics/h/resume", nil},
				{"DELETE", "/v1/topics/h/limits", nil},
				{"PUT", "/v1/schedules/s", map[string]any{"cron": "* * * * *", "topic": "h", "job": map[string]any{"body": "x"}}},
				{"POST", "/v1/schedules/s/pause", nil},
				{"POST", "/v1/schedules/s/resume", nil},
				{"DELETE", "/v1/schedules/s", nil},
			} {
				start := time.Now()
				e.call(c.method, c.path, c.body).wantError(t, http.StatusServiceUnavailable, codeUnavailable)
				if took := time.Since(start); took > 1500*time.Millisecond {
					t.Errorf("%s %s took %v with a 500ms request timeout", c.method, c.path, took)
				}
			}
			start := time.Now()
			e.call("GET", "/metrics", nil).want(t, http.StatusOK)
			if took := time.Since(start); took > 1500*time.Millisecond {
				t.Errorf("GET /metrics took %v with a 500ms request timeout", took)
			}
		})
	}
}

// TestReviewManyRequestsAtOnceWhileRedisHangs sends many requests at once to a paused Redis:
// every one ends in time, and once Redis runs again the server's goroutines come back to about
// what they were.
func TestReviewManyRequestsAtOnceWhileRedisHangs(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.RequestTimeout = 500 * time.Millisecond })
	e.enqueue("m", map[string]any{"id": "x"})
	transport := e.http.Transport.(*contractTransport).next.(*http.Transport)
	transport.MaxIdleConnsPerHost = 300
	before := runtime.NumGoroutine()
	e.redis.Stop(t)
	const n = 200
	var wg sync.WaitGroup
	took := make([]time.Duration, n)
	status := make([]int, n)
	for i := range n {
		wg.Go(func() {
			start := time.Now()
			status[i] = e.call("POST", "/v1/topics/m/jobs", map[string]any{"id": fmt.Sprint("j", i)}).status
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	e.redis.Cont(t)
	for i := range n {
		if status[i] != http.StatusServiceUnavailable || took[i] > 2*time.Second {
			t.Errorf("request %d: status %d after %v, want 503 within the 500ms timeout", i, status[i], took[i])
		}
	}
	e.call("GET", "/v1/topics/m/jobs/x", nil).want(t, http.StatusOK)
	transport.CloseIdleConnections() // their goroutines, client's and server's, are not the API's
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+50 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before+50 {
		t.Errorf("%d goroutines, %d before the requests", g, before)
	}
}
