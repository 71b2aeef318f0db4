package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// TestRequestsEndInTimeWhateverTheRedisClient pauses the redis-server (or every node of a
// cluster) under the API: each request answers 503 within its timeout, however the Redis
// client treats deadlines.
func TestRequestsEndInTimeWhateverTheRedisClient(t *testing.T) {
	t.Parallel()
	// /readyz has a Redis client of its own (Config.Redis) that does not end calls at their
	// context's deadline, beside a store client that does: a paused Redis must still answer 503
	// within the readiness timeout.
	t.Run("readyz with a ping client that ignores deadlines", func(t *testing.T) {
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
	})

	// A batch whose jobs span many partitions answers within its timeout, 503 or every item
	// refused.
	t.Run("batch over many partitions", func(t *testing.T) {
		t.Parallel()
		for _, deadlines := range []bool{true, false} {
			t.Run(fmt.Sprintf("client ends calls at deadlines %v", deadlines), func(t *testing.T) {
				t.Parallel()
				e := newEnvOn(t, deadlines, func(c *Config) { c.RequestTimeout = 500 * time.Millisecond })
				e.enqueue("b", map[string]any{"id": "x"})
				var jobs []any
				for i := range 50 {
					jobs = append(jobs, map[string]any{"id": fmt.Sprint("j", i)})
				}
				e.redis.Stop(t)
				defer e.redis.Cont(t)
				start := time.Now()
				r := e.call("POST", "/v1/topics/b/jobs/batch", map[string]any{"jobs": jobs})
				if took := time.Since(start); took > 1500*time.Millisecond {
					t.Errorf("the batch took %v with a 500ms request timeout", took)
				}
				switch r.status {
				case http.StatusServiceUnavailable:
				case http.StatusOK:
					if n := strings.Count(string(r.body), `"error"`); n != len(jobs) {
						t.Errorf("200 with %d items refused of %d: %s", n, len(jobs), r.body)
					}
				default:
					t.Errorf("status %d: %s", r.status, r.body)
				}
			})
		}
	})

	// The Redis client has ContextTimeoutEnabled but read and write timeouts of -2, with which
	// go-redis sets no socket deadline at all, the context's neither: a paused Redis must still
	// give 503 in time.
	t.Run("client without socket deadlines", func(t *testing.T) {
		t.Parallel()
		opts := &redis.Options{ContextTimeoutEnabled: true, ReadTimeout: -2, WriteTimeout: -2}
		e := newEnvWith(t, opts, func(c *Config) { c.RequestTimeout = 500 * time.Millisecond })
		e.enqueue("d", map[string]any{"id": "x"})
		e.redis.Stop(t)
		defer e.redis.Cont(t)
		for _, path := range []string{"/v1/topics/d", "/v1/topics/d/jobs/x", "/readyz"} {
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			req, _ := http.NewRequestWithContext(ctx, "GET", e.url+path, nil)
			resp, err := e.http.Do(req)
			cancel()
			if err != nil {
				t.Errorf("GET %s: %v after %v", path, err, time.Since(start))
				continue
			}
			_ = resp.Body.Close()
			if took := time.Since(start); resp.StatusCode != http.StatusServiceUnavailable || took > 1500*time.Millisecond {
				t.Errorf("GET %s: %d after %v, want 503 within the 500ms timeout", path, resp.StatusCode, took)
			}
		}
	})

	// A delayq Client on a Redis Cluster whose client ends calls at their context's deadline,
	// so that the API's store calls run inline, with every node paused.
	t.Run("cluster with every node paused", func(t *testing.T) {
		t.Parallel()
		cl := redistest.NewCluster(t, 3, 0)
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = cc.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		logger := slog.New(slog.NewTextHandler(io.Discard, nil))
		c, err := delayq.New(ctx, cc, delayq.Config{Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		h, err := New(Config{Client: c, Redis: cc, Logger: logger, RequestTimeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if !clusterInline(h) {
			t.Fatal("the API does not run its store calls inline on this client")
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		send := func(method, path, body string) (int, time.Duration) {
			start := time.Now()
			rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(rctx, method, srv.URL+path, strings.NewReader(body))
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			_ = resp.Body.Close()
			return resp.StatusCode, time.Since(start)
		}
		for i := range 5 {
			if st, _ := send("POST", "/v1/topics/c/jobs", `{"id":"j`+string(rune('0'+i))+`"}`); st != http.StatusCreated {
				t.Fatalf("enqueue: %d", st)
			}
		}
		for _, n := range cl.Nodes {
			n.Stop(t)
			defer n.Cont(t)
		}
		for _, r := range []struct{ method, path, body string }{
			{"GET", "/readyz", ""},
			{"GET", "/v1/topics", ""},
			{"GET", "/v1/topics/c", ""},
			{"POST", "/v1/topics/c/jobs", `{"id":"k"}`},
			{"POST", "/v1/topics/c/jobs/batch", `{"jobs":[{"id":"b1"},{"id":"b2"},{"id":"b3"}]}`},
			{"GET", "/v1/topics/c/jobs/j1", ""},
			{"DELETE", "/v1/topics/c/jobs/j2", ""},
			{"POST", "/v1/topics/c/reserve", `{"wait_ms":100}`},
		} {
			st, took := send(r.method, r.path, r.body)
			if took > 1500*time.Millisecond || (st != http.StatusServiceUnavailable && !(r.method == "POST" && strings.HasSuffix(r.path, "batch") && st == http.StatusOK)) {
				t.Errorf("%s %s: %d after %v, want 503 within the 500ms timeout", r.method, r.path, st, took)
			}
		}
	})
}

// TestManyRequestsAtOnceWhileRedisHangs sends many requests at once to a paused Redis:
// every one ends in time, and once Redis runs again the server's goroutines come back to about
// what they were.
func TestManyRequestsAtOnceWhileRedisHangs(t *testing.T) {
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

// TestRoutesRecoverAfterRedisIsKilledAndRestarted kills the redis-server under a client
// whose calls run inline, then starts it again: while it is down requests answer 503 in time,
// and once it is back the first requests succeed, the pool's dead connections notwithstanding.
func TestRoutesRecoverAfterRedisIsKilledAndRestarted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.RequestTimeout = 500 * time.Millisecond })
	e.enqueue("k", map[string]any{"id": "before"})
	e.redis.Kill(t)
	for _, path := range []string{"/v1/topics/k", "/v1/topics/k/jobs/before"} {
		start := time.Now()
		e.call("GET", path, nil).wantError(t, http.StatusServiceUnavailable, codeUnavailable)
		if took := time.Since(start); took > 1500*time.Millisecond {
			t.Errorf("GET %s took %v with Redis down and a 500ms timeout", path, took)
		}
	}
	e.redis.Restart(t)
	testwait.For(t, 10*time.Second, "an enqueue to succeed again", func() bool {
		return e.call("POST", "/v1/topics/k/jobs", map[string]any{"id": "after"}).status == http.StatusCreated
	})
	e.get("k", "after")
	for i := range 20 {
		e.call("GET", "/v1/topics/k/jobs/after", nil).want(t, http.StatusOK)
		e.call("POST", "/v1/topics/k/jobs", map[string]any{"id": fmt.Sprint("more", i)}).want(t, http.StatusCreated)
	}
}

// sentHook tells sent of every command that names topic, as it goes to Redis.
type sentHook struct {
	topic string
	sent  chan struct{}
}

func (h sentHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h sentHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.saw(cmd)
		return next(ctx, cmd)
	}
}

func (h sentHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.saw(cmd)
		}
		return next(ctx, cmds)
	}
}

// saw signals sent when cmd names the topic.
func (h sentHook) saw(cmd redis.Cmder) {
	if strings.Contains(fmt.Sprint(cmd.Args()...), h.topic) {
		select {
		case h.sent <- struct{}{}:
		default:
		}
	}
}

// TestClientLeavesWhileRedisHangs leaves a request while its call waits on a paused
// redis-server: once Redis runs again, what the call did is undone or applied once.
func TestClientLeavesWhileRedisHangs(t *testing.T) {
	t.Parallel()
	// Once Redis runs again and leases the job to the reserve nobody reads, the job must be due
	// again at once, not after its TTR.
	t.Run("reserve puts its job back", func(t *testing.T) {
		t.Parallel()
		hook := sentHook{topic: "rh", sent: make(chan struct{}, 1)}
		e := newEnv(t, func(c *Config) { c.Redis.AddHook(hook) })
		e.reserve("rh", map[string]any{"wait_ms": 1}) // subscribes to the topic's wake-ups
		e.enqueue("rh", map[string]any{"id": "p"})
		e.redis.Stop(t)
		select {
		case <-hook.sent: // the enqueue's
		default:
		}
		ctx, cancel := context.WithCancel(context.Background())
		req := httptest.NewRequestWithContext(ctx, "POST", "/v1/topics/rh/reserve", strings.NewReader(`{"ttr_ms":600000}`))
		req.Header.Set("Content-Type", "application/json")
		done := make(chan struct{})
		go func() {
			defer close(done)
			e.handler.ServeHTTP(httptest.NewRecorder(), req)
		}()
		<-hook.sent // the reserve's call is on its way to the paused Redis
		cancel()
		<-done
		e.redis.Cont(t)
		testwait.For(t, 10*time.Second, "the job to be due again", func() bool {
			return len(e.reserve("rh", map[string]any{"wait_ms": 100})) == 1
		})
	})

	// The ack's handler ends within the request timeout, and once Redis runs again the ack
	// applied once or not at all: a second ack either succeeds or finds the lease gone with the
	// job, and the job is never handed out again.
	t.Run("ack applies once or not at all", func(t *testing.T) {
		t.Parallel()
		hook := sentHook{topic: "ak", sent: make(chan struct{}, 1)}
		e := newEnv(t, func(c *Config) {
			c.Redis.AddHook(hook)
			c.RequestTimeout = 500 * time.Millisecond
		})
		e.enqueue("ak", map[string]any{"id": "a"})
		lease := e.reserveOne("ak", map[string]any{"ttr_ms": 600000}).Lease
		e.redis.Stop(t)
		select {
		case <-hook.sent:
		default:
		}
		ctx, cancel := context.WithCancel(context.Background())
		body := fmt.Sprintf(`{"lease":%q}`, lease)
		req := httptest.NewRequestWithContext(ctx, "POST", "/v1/topics/ak/jobs/a/ack", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		done := make(chan time.Time)
		go func() {
			e.handler.ServeHTTP(httptest.NewRecorder(), req)
			done <- time.Now()
		}()
		<-hook.sent // the ack's call is on its way to the paused Redis
		left := time.Now()
		cancel()
		if ended := <-done; ended.Sub(left) > 1500*time.Millisecond {
			t.Errorf("the ack's handler ended %v after its client left, with a 500ms timeout", ended.Sub(left))
		}
		e.redis.Cont(t)
		switch r := e.raw(e.url, "POST", "/v1/topics/ak/jobs/a/ack", "application/json", body); r.status {
		case http.StatusNoContent:
		case http.StatusConflict:
			e.call("GET", "/v1/topics/ak/jobs/a", nil).want(t, http.StatusNotFound)
		default:
			t.Fatalf("the second ack: %d %s", r.status, r.body)
		}
		if jobs := e.reserve("ak", map[string]any{"wait_ms": 200}); len(jobs) != 0 {
			t.Errorf("the acked job was handed out again: %+v", jobs)
		}
	})
}

// clusterInline reports whether h, an API, runs its store calls inline.
func clusterInline(h http.Handler) bool {
	a, ok := h.(*api)
	return ok && a.inline
}
