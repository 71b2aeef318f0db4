package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/server"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// newServer builds a Server on a redis-server of the test's own, with the defaults of
// `delayq server` changed by change, and serves its Handler on an httptest server. Both are
// closed when the test ends.
func newServer(t *testing.T, change func(*server.Config)) *httptest.Server {
	t.Helper()
	s := buildServer(t, change, slog.New(slog.DiscardHandler))
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return hs
}

// buildServer builds a Server logging to log on a redis-server of the test's own, with the
// defaults of `delayq server` changed by change; it is closed when the test ends.
func buildServer(t *testing.T, change func(*server.Config), log *slog.Logger) *server.Server {
	t.Helper()
	rs := redistest.Standalone(t)
	cfg := server.DefaultConfig()
	cfg.RedisURL = "redis://" + rs.Addr
	if change != nil {
		change(&cfg)
	}
	s, err := server.New(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// serve runs s.Serve(ctx) on a loopback listener and returns the listener and the channel
// Serve's result comes on, once s has logged its "listening on" line to logs.
func serve(t *testing.T, ctx context.Context, s *server.Server, logs *testwait.Buffer) (net.Listener, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	testwait.For(t, 10*time.Second, `the "listening on" line`, func() bool {
		return strings.Contains(logs.String(), "listening on "+ln.Addr().String())
	})
	return ln, served
}

// do sends a request to url with an optional Host, bearer token and JSON body, and returns
// the answer's body and status.
func do(t *testing.T, method, url, host, token, body string) (string, int) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode
}

// The server serves Prometheus metrics at /metrics, the library's and the Go runtime's, unless
// they are turned off; its health endpoints answer either way.
func TestServerServesMetrics(t *testing.T) {
	t.Parallel()
	on := newServer(t, nil)
	if body, status := do(t, "POST", on.URL+"/v1/topics/m/jobs", "", "", `{"body": 1}`); status != http.StatusCreated {
		t.Fatalf("enqueue: %d %s", status, body)
	}
	body, status := do(t, "GET", on.URL+"/metrics", "", "", "")
	if status != 200 || !strings.Contains(body, "delayq_jobs_enqueued_total") || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics: %d\n%.500s", status, body)
	}
	off := newServer(t, func(c *server.Config) { c.Metrics = false })
	if _, status := do(t, "GET", off.URL+"/metrics", "", "", ""); status != 404 {
		t.Errorf("/metrics with --metrics=false: status %d, want 404", status)
	}
	if _, status := do(t, "GET", off.URL+"/healthz", "", "", ""); status != 200 {
		t.Errorf("/healthz: status %d", status)
	}
	if _, status := do(t, "GET", off.URL+"/readyz", "", "", ""); status != 200 {
		t.Errorf("/readyz: status %d", status)
	}
}

// A server whose only tokens come from a tokens file is not open: like one with admin tokens,
// it serves any Host, since its tokens protect it; a server without tokens refuses a Host
// that is not its own.
func TestServerWithATokensFileIsNotOpen(t *testing.T) {
	t.Parallel()
	const reader = "reader-token-000000001"
	path := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(path, []byte(`{"tokens": [{"name": "on-call", "token": "`+reader+`", "role": "reader"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	hs := newServer(t, func(c *server.Config) { c.TokensFile = path })
	if body, status := do(t, "GET", hs.URL+"/v1/topics", "queue.example", reader, ""); status != http.StatusOK {
		t.Fatalf("GET /v1/topics with Host queue.example and a reader token: %d, want 200: %s", status, body)
	}
	open := newServer(t, nil)
	if body, status := do(t, "GET", open.URL+"/v1/topics", "queue.example", "", ""); status != http.StatusForbidden {
		t.Fatalf("GET /v1/topics of an open server with Host queue.example: %d, want 403: %s", status, body)
	}
}

// Serve answers on its listener once it has logged "listening on", and when its context ends
// shuts down, logs "stopped" and returns nil; the Server is closed then, so that Close does
// nothing more.
func TestServeStopsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	var logs testwait.Buffer
	s := buildServer(t, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, served := serve(t, ctx, s, &logs)
	if body, status := do(t, "GET", "http://"+ln.Addr().String()+"/healthz", "", "", ""); status != 200 {
		t.Fatalf("/healthz: %d %s", status, body)
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve returned %v after its context ended, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Serve did not return 30s after its context ended; logs:\n%s", logs.String())
	}
	for _, line := range []string{"shutting down", "stopped"} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("no %q line in the logs:\n%s", line, logs.String())
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close after Serve: %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the listener still accepts connections after Serve returned")
	}
}

// Close while Serve runs shuts the server down as the end of Serve's context does, and returns
// once Serve has: nothing keeps answering on a closed store.
func TestCloseDuringServeShutsItDown(t *testing.T) {
	t.Parallel()
	var logs testwait.Buffer
	s := buildServer(t, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	ln, served := serve(t, context.Background(), s, &logs)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Close returns once Serve's shutdown is over: the listener is closed and the last line
	// logged by then.
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the listener still accepts connections after Close")
	}
	if !strings.Contains(logs.String(), "stopped") {
		t.Errorf("no \"stopped\" line in the logs when Close returned:\n%s", logs.String())
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve returned %v after Close, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
}

// Serve on a closed server refuses at once and closes the listener, instead of serving a
// store that is gone.
func TestServeAfterCloseRefuses(t *testing.T) {
	t.Parallel()
	s := buildServer(t, nil, slog.New(slog.DiscardHandler))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Serve(ctx, ln); err == nil {
		t.Fatal("Serve on a closed server returned nil")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the listener still accepts connections")
	}
}
