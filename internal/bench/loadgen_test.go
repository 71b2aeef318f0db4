package bench

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestLoadgenSpeaksHTTP drives a net/http server through the load generator's own HTTP/1.1
// client: bodies both ways, answers with a length and chunked, a connection the server closes
// (dialled again and counted), a status other than the one wanted, and a request whose context
// ends while the server holds it.
func TestLoadgenSpeaksHTTP(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "no content type", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(b)
	})
	mux.HandleFunc("GET /chunked", func(w http.ResponseWriter, r *http.Request) {
		for range 3 {
			_, _ = io.WriteString(w, strings.Repeat("c", 5000))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("GET /close", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, "bye")
	})
	mux.HandleFunc("GET /hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx := context.Background()
	g := newLoadgen(srv.URL)
	cs, err := g.conns(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer closeConns(cs)
	c := cs[0]
	for i := range 3 {
		body := `{"n":` + strings.Repeat("1", i+1) + `}`
		got, err := c.do(ctx, http.MethodPost, "/echo", []byte(body), http.StatusCreated)
		if err != nil || string(got) != body {
			t.Fatalf("echo %d: %q, %v; want %q", i, got, err, body)
		}
	}
	got, err := c.do(ctx, http.MethodGet, "/chunked", nil, http.StatusOK)
	if err != nil || len(got) != 15000 {
		t.Fatalf("chunked: %d bytes, %v; want 15000", len(got), err)
	}
	if got, err := c.do(ctx, http.MethodGet, "/close", nil, http.StatusOK); err != nil || string(got) != "bye" {
		t.Fatalf("close: %q, %v", got, err)
	}
	if _, err := c.do(ctx, http.MethodPost, "/echo", []byte(`{}`), http.StatusCreated); err != nil {
		t.Fatalf("after the server closed the connection: %v", err)
	}
	if d := g.dials.Load(); d != 2 {
		t.Errorf("dialled %d times, want 2 (once more after the server closed the connection)", d)
	}
	_, err = c.do(ctx, http.MethodGet, "/missing", nil, http.StatusOK)
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a 404 where 200 is wanted: %v", err)
	}

	hctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.do(hctx, http.MethodGet, "/hang", nil, http.StatusOK)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("a request held past its context: %v after %v", err, time.Since(start))
	}
	if _, err := c.do(ctx, http.MethodPost, "/echo", []byte(`{}`), http.StatusCreated); err != nil {
		t.Fatalf("after a request was abandoned: %v", err)
	}
}
