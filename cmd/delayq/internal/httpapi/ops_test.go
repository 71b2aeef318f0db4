package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq/internal/testwait"
)

func TestAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.Tokens = []string{"s3cret", "other-token"} })
	for _, c := range []struct {
		name, method, path, auth string
		status                   int
	}{
		{"no token", "GET", "/v1/topics", "", 401},
		{"wrong token", "GET", "/v1/topics", "Bearer nope", 401},
		{"prefix of a token", "GET", "/v1/topics", "Bearer s3cre", 401},
		{"token plus more", "GET", "/v1/topics", "Bearer s3crets", 401},
		{"basic scheme", "GET", "/v1/topics", "Basic s3cret", 401},
		{"no scheme", "GET", "/v1/topics", "s3cret", 401},
		{"empty bearer", "GET", "/v1/topics", "Bearer ", 401},
		{"document needs a token", "GET", "/v1/openapi.json", "", 401},
		{"unknown route needs a token", "GET", "/v1/nothing", "", 401},
		{"enqueue without token", "POST", "/v1/topics/a/jobs", "", 401},
		{"first token", "GET", "/v1/topics", "Bearer s3cret", 200},
		{"second token", "GET", "/v1/topics", "Bearer other-token", 200},
		{"scheme in lower case", "GET", "/v1/topics", "bearer s3cret", 200},
		{"healthz", "GET", "/healthz", "", 200},
		{"readyz", "GET", "/readyz", "", 200},
		{"metrics", "GET", "/metrics", "", 401},
		{"metrics with a token", "GET", "/metrics", "Bearer s3cret", 200},
		{"root", "GET", "/", "", 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			var hdr []string
			if c.auth != "" {
				hdr = []string{"Authorization", c.auth}
			}
			ctype := ""
			body := ""
			if c.method == "POST" {
				ctype, body = "application/json", "{}"
			}
			r := e.raw(e.url, c.method, c.path, ctype, body, hdr...)
			if c.status == 401 {
				r.wantError(t, 401, codeUnauthenticated)
				if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
					t.Fatalf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
				}
				return
			}
			r.want(t, c.status)
		})
	}
	// Nothing was enqueued without a token.
	r := e.raw(e.url, "GET", "/v1/topics/a", "", "", "Authorization", "Bearer s3cret")
	r.wantError(t, 404, codeNotFound)
	// Without tokens, no request needs one.
	open := newEnv(t, nil)
	open.call("GET", "/v1/topics", nil).want(t, http.StatusOK)
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"no client", Config{}},
		{"empty token", Config{Client: e.client, Tokens: []string{""}}},
		{"token with space", Config{Client: e.client, Tokens: []string{"a b"}}},
		{"negative timeout", Config{Client: e.client, RequestTimeout: -1}},
		{"negative batch bytes", Config{Client: e.client, MaxBatchBytes: -1}},
	} {
		if _, err := New(c.cfg); err == nil {
			t.Errorf("%s: New succeeded", c.name)
		}
	}
}

func TestHealthAndRoot(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.call("GET", "/healthz", nil).want(t, http.StatusOK)
	e.call("GET", "/readyz", nil).want(t, http.StatusOK)
	r := e.call("GET", "/", nil).want(t, http.StatusOK)
	if !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !bytes.Contains(r.body, []byte(`href="/v1/openapi.json"`)) {
		t.Fatalf("root page %q: %s", r.header.Get("Content-Type"), r.body)
	}
}

// TestStoreUnavailable pauses the redis-server (SIGSTOP): requests must get 503 within the
// request timeout, and recover once it runs again.
func TestStoreUnavailable(t *testing.T) {
	t.Parallel()
	for _, deadlines := range []bool{true, false} {
		t.Run(fmt.Sprintf("client ends calls at deadlines %v", deadlines), func(t *testing.T) {
			t.Parallel()
			testStoreUnavailable(t, deadlines)
		})
	}
}

func testStoreUnavailable(t *testing.T, deadlines bool) {
	e := newEnvOn(t, deadlines, func(c *Config) { c.RequestTimeout = time.Second })
	e.enqueue("u", map[string]any{"id": "j"})
	e.redis.Stop(t)
	stopped := true
	defer func() {
		if stopped {
			e.redis.Cont(t)
		}
	}()
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/topics/u/jobs/j", nil},
		{"POST", "/v1/topics/u/jobs", map[string]any{"id": "k"}},
		{"POST", "/v1/topics/u/reserve", map[string]any{"wait_ms": 200}},
		{"GET", "/v1/topics", nil},
		{"GET", "/readyz", nil},
	} {
		start := time.Now()
		e.call(c.method, c.path, c.body).wantError(t, http.StatusServiceUnavailable, codeUnavailable)
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("%s %s took %v with a 1s request timeout", c.method, c.path, took)
		}
	}
	// Metrics still answer, with the store reported down.
	r := e.call("GET", "/metrics", nil).want(t, http.StatusOK)
	if !bytes.Contains(r.body, []byte("delayq_store_up 0")) {
		t.Fatalf("metrics while the store is down:\n%s", r.body)
	}
	e.redis.Cont(t)
	stopped = false
	testwait.For(t, 10*time.Second, "readyz after SIGCONT", func() bool {
		return e.call("GET", "/readyz", nil).status == http.StatusOK
	})
	e.call("GET", "/v1/topics/u/jobs/j", nil).want(t, http.StatusOK)
}

// TestReadyzWithoutRedis checks the readiness probe that goes through the Client.
func TestReadyzWithoutRedis(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.Redis = nil; c.RequestTimeout = time.Second })
	e.call("GET", "/readyz", nil).want(t, http.StatusOK)
	e.redis.Kill(t)
	start := time.Now()
	e.call("GET", "/readyz", nil).wantError(t, http.StatusServiceUnavailable, codeUnavailable)
	e.call("GET", "/v1/topics", nil).wantError(t, http.StatusServiceUnavailable, codeUnavailable)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("two requests to a dead Redis took %v", took)
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.enqueue("m", map[string]any{"id": "a"})
	e.enqueue("m", map[string]any{"id": "b", "max_retries": 0})
	e.enqueue("m", map[string]any{"id": "c", "delay_ms": 60000})
	e.enqueue("m", map[string]any{"id": "d", "delay_ms": 60000})
	e.call("DELETE", "/v1/topics/m/jobs/d", nil).want(t, http.StatusNoContent)
	for _, j := range e.reserve("m", map[string]any{"max": 2}) {
		if j.ID == "a" {
			e.call("POST", "/v1/topics/m/jobs/a/ack", map[string]any{"lease": j.Lease}).want(t, http.StatusNoContent)
		} else {
			e.call("POST", "/v1/topics/m/jobs/b/nack", map[string]any{"lease": j.Lease}).want(t, http.StatusNoContent)
		}
	}
	e.enqueue("m", map[string]any{"id": "e", "backoff_ms": []int{0}})
	j := e.reserveOne("m", nil)
	e.call("POST", "/v1/topics/m/jobs/e/nack", map[string]any{"lease": j.Lease}).want(t, http.StatusNoContent)

	r := e.call("GET", "/metrics", nil).want(t, http.StatusOK)
	for _, line := range []string{
		`delayq_jobs{state="delayed",topic="m"} 1`,
		`delayq_jobs{state="ready",topic="m"} 1`,
		`delayq_jobs{state="reserved",topic="m"} 0`,
		`delayq_jobs{state="dead",topic="m"} 1`,
		`delayq_store_up 1`,
		`delayq_jobs_enqueued_total{topic="m"} 5`,
		`delayq_jobs_delivered_total{mode="pull",topic="m"} 3`,
		`delayq_jobs_acked_total{topic="m"} 1`,
		`delayq_jobs_nacked_total{topic="m"} 2`,
		`delayq_jobs_retried_total{topic="m"} 1`,
		`delayq_jobs_dead_total{topic="m"} 1`,
		`delayq_jobs_cancelled_total{topic="m"} 1`,
		`delayq_delivery_lateness_seconds_count{mode="pull"} 3`,
	} {
		if !bytes.Contains(r.body, []byte(line+"\n")) {
			t.Errorf("metrics lack %q", line)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", r.body)
	}
}

// TestRoutesMatchOpenAPI checks that the OpenAPI document describes exactly the routes served.
func TestRoutesMatchOpenAPI(t *testing.T) {
	t.Parallel()
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.0.") {
		t.Fatalf("openapi %q, want 3.0.x", doc.OpenAPI)
	}
	var documented, served []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	for _, rt := range routes() {
		served = append(served, rt.method+" "+rt.path)
	}
	sort.Strings(documented)
	sort.Strings(served)
	if diff := cmp.Diff(served, documented); diff != "" {
		t.Fatalf("routes (-served +documented):\n%s", diff)
	}

	e := newEnv(t, nil)
	a := e.handler.(*api)
	fill := strings.NewReplacer("{topic}", "t", "{id}", "x")
	for _, rt := range routes() {
		req := httptest.NewRequest(rt.method, fill.Replace(rt.path), nil)
		if _, pattern := a.mux.Handler(req); pattern != rt.pattern() {
			t.Errorf("%s %s is routed to %q, want %q", rt.method, rt.path, pattern, rt.pattern())
		}
		// And over HTTP: neither the router's 404 nor a 405. The body {} is not what every
		// route takes.
		r := e.badRequests().raw(e.url, rt.method, fill.Replace(rt.path), "application/json", "{}")
		if r.status == http.StatusMethodNotAllowed || bytes.Contains(r.body, []byte("no route")) {
			t.Errorf("%s %s: %d %s", rt.method, rt.path, r.status, r.body)
		}
	}
	served0 := e.call("GET", "/v1/openapi.json", nil).want(t, http.StatusOK)
	if !bytes.Equal(served0.body, openAPIDoc) || served0.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/openapi.json does not serve the document")
	}
}

// TestOpenAPIRefs checks that every $ref of the document resolves.
func TestOpenAPIRefs(t *testing.T) {
	t.Parallel()
	var doc any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	refs := 0
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				refs++
				if !resolves(doc, ref) {
					t.Errorf("$ref %q does not resolve", ref)
				}
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(doc)
	if refs == 0 {
		t.Fatal("no $ref found")
	}
}

func resolves(doc any, ref string) bool {
	path, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return false
	}
	cur := doc
	for _, part := range strings.Split(path, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[part]; !ok {
			return false
		}
	}
	return true
}

// TestClientGoneEndsWait checks that a long poll ends when its client goes away: the next
// reserve of the same topic is not starved, and the handler returns.
func TestClientGoneEndsWait(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	done := make(chan struct{})
	h := e.handler
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequestWithContext(ctx, "POST", "/v1/topics/gone/reserve", strings.NewReader(`{"wait_ms": 60000}`))
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	go func() {
		defer close(done)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}()
	// The client goes away while the handler waits (or, on a slow machine, before it does).
	stop := time.AfterFunc(300*time.Millisecond, cancel)
	defer stop.Stop()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the reserve handler still waits 10s after its client went away")
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("the reserve of an empty topic returned after %v, before its client went away", took)
	}
}

// TestCancelledWaitAnswersEmpty checks that a long poll ended from the server side (shutdown)
// answers 200 with no jobs rather than an error.
func TestCancelledWaitAnswersEmpty(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequestWithContext(ctx, "POST", "/v1/topics/quiet/reserve", strings.NewReader(`{"wait_ms": 60000}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	time.AfterFunc(200*time.Millisecond, cancel)
	e.handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"jobs":[]`) {
		t.Fatalf("a cut-short long poll answered %d %s; want 200 with no jobs", rec.Code, rec.Body)
	}
}

// TestPushEnqueuedHook checks that the push delivery hook hears of every topic that gets a
// job with a callback_url, and of no other.
func TestPushEnqueuedHook(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var heard []string
	e := newEnv(t, func(c *Config) {
		c.PushEnqueued = func(topic string) { mu.Lock(); heard = append(heard, topic); mu.Unlock() }
	})
	post := func(path, body string) {
		t.Helper()
		r := e.raw(e.pushURL, "POST", path, "application/json", body)
		if r.status >= 300 {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
	}
	post("/v1/topics/pull/jobs", `{"body": 1}`)
	post("/v1/topics/push-one/jobs", `{"body": 1, "callback_url": "https://hooks.example/x"}`)
	post("/v1/topics/push-batch/jobs/batch", `{"jobs": [{"body": 1}, {"callback_url": "https://hooks.example/y"}]}`)
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(heard, ",") != "push-one,push-batch" {
		t.Errorf("hook heard %v, want [push-one push-batch]", heard)
	}
}

// TestEveryRouteEndsInTimeWhileRedisHangs sends a request of every route that calls the store
// while the redis-server is paused (SIGSTOP): each must answer 503 within its timeout, whether
// or not the Redis client ends calls at their context's deadline itself (with it, the calls run
// on the request's goroutine; without, on one of their own).
func TestEveryRouteEndsInTimeWhileRedisHangs(t *testing.T) {
	t.Parallel()
	for _, deadlines := range []bool{true, false} {
		t.Run(fmt.Sprintf("client ends calls at deadlines %v", deadlines), func(t *testing.T) {
			t.Parallel()
			e := newEnvOn(t, deadlines, func(c *Config) { c.RequestTimeout = 500 * time.Millisecond })
			for _, id := range []string{"a", "n", "t", "r"} {
				e.enqueue("h", map[string]any{"id": id})
			}
			leases := map[string]string{}
			for _, j := range e.reserve("h", map[string]any{"max": 4}) {
				leases[j.ID] = j.Lease
			}
			e.enqueue("h", map[string]any{"id": "later", "delay_ms": 60000})
			e.redis.Stop(t)
			defer e.redis.Cont(t)
			for _, c := range []struct {
				method, path string
				body         any
			}{
				{"GET", "/v1/topics", nil},
				{"GET", "/v1/topics/h", nil},
				{"POST", "/v1/topics/h/pause", nil},
				{"PUT", "/v1/topics/h/limits", map[string]any{"rate": 10, "period_ms": 1000}},
				{"POST", "/v1/topics/h/jobs", map[string]any{"id": "k"}},
				{"POST", "/v1/topics/h/jobs/batch", map[string]any{"jobs": []any{map[string]any{"id": "b"}}}},
				{"GET", "/v1/topics/h/jobs/later", nil},
				{"PATCH", "/v1/topics/h/jobs/later", map[string]any{"delay_ms": 1000}},
				{"DELETE", "/v1/topics/h/jobs/later", nil},
				{"POST", "/v1/topics/h/reserve", map[string]any{"wait_ms": 100}},
				{"POST", "/v1/topics/h/jobs/a/ack", map[string]any{"lease": leases["a"]}},
				{"POST", "/v1/topics/h/jobs/n/nack", map[string]any{"lease": leases["n"]}},
				{"POST", "/v1/topics/h/jobs/t/touch", map[string]any{"lease": leases["t"]}},
				{"POST", "/v1/topics/h/jobs/r/release", map[string]any{"lease": leases["r"]}},
				{"GET", "/v1/topics/h/dead", nil},
				{"POST", "/v1/topics/h/dead/requeue", map[string]any{"all": true}},
				{"DELETE", "/v1/topics/h/dead", map[string]any{"all": true}},
				{"GET", "/v1/schedules", nil},
				{"GET", "/v1/schedules/s", nil},
				{"PUT", "/v1/schedules/s", map[string]any{"cron": "* * * * *", "topic": "h", "job": map[string]any{"body": "x"}}},
				{"POST", "/v1/schedules/s/pause", nil},
				{"POST", "/v1/schedules/s/resume", nil},
				{"DELETE", "/v1/schedules/s", nil},
				{"POST", "/v1/topics/h/resume", nil},
				{"DELETE", "/v1/topics/h/limits", nil},
				{"GET", "/readyz", nil},
				{"DELETE", "/v1/topics/h", nil},
			} {
				start := time.Now()
				e.call(c.method, c.path, c.body).wantError(t, http.StatusServiceUnavailable, codeUnavailable)
				if took := time.Since(start); took > 1500*time.Millisecond {
					t.Errorf("%s %s took %v with a 500ms request timeout", c.method, c.path, took)
				}
			}
			// Metrics answer, with the store reported down, in time too.
			start := time.Now()
			e.call("GET", "/metrics", nil).want(t, http.StatusOK)
			if took := time.Since(start); took > 1500*time.Millisecond {
				t.Errorf("GET /metrics took %v with a 500ms request timeout", took)
			}
		})
	}
}
