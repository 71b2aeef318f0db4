package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/redistest"
)

// TestReviewClusterRoutesEndInTimeWhileNodesHang serves a delayq Client on a Redis Cluster
// whose client ends calls at their context's deadline, so that the API's store calls run
// inline, and pauses every node: each request must answer 503 within its timeout.
func TestReviewClusterRoutesEndInTimeWhileNodesHang(t *testing.T) {
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
}

// clusterInline reports whether h, an API, runs its store calls inline.
func clusterInline(h http.Handler) bool {
	a, ok := h.(*api)
	return ok && a.inline
}
