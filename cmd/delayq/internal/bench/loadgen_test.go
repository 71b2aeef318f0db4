package bench

import (
	"context"
	"errors"
	"io"
	"net"
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

// TestLoadgenFollowsTheBaseURL drives a server whose API is under a path of the base URL,
// as behind a reverse proxy, and checks that a base URL the load generator cannot speak to is
// refused with an error that says so.
func TestLoadgenFollowsTheBaseURL(t *testing.T) {
	t.Parallel()
	api := http.NewServeMux()
	api.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {})
	api.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, r.Host+" "+string(b))
	})
	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", api))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx := context.Background()
	for _, base := range []string{srv.URL + "/api", srv.URL + "/api/"} {
		cs, err := newLoadgen(base).conns(ctx, 1)
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		got, err := cs[0].do(ctx, http.MethodPost, "/echo", []byte(`{}`), http.StatusCreated)
		closeConns(cs)
		if want := strings.TrimPrefix(srv.URL, "http://") + " {}"; err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", base, got, err, want)
		}
	}
	for _, base := range []string{"https://" + strings.TrimPrefix(srv.URL, "http://"), "ftp://x", "localhost:7070"} {
		_, err := newLoadgen(base).conns(ctx, 1)
		if err == nil || !strings.Contains(err.Error(), "http://") {
			t.Errorf("%s: %v, want an error that asks for an http:// URL", base, err)
		}
	}
}

// TestLoadgenRedialsAConnectionTheServerClosedWhileIdle lets the server close a
// keep-alive connection that sat idle past its idle timeout: the next request goes on a new
// connection, as with net/http's client, instead of failing on the closed one.
func TestLoadgenRedialsAConnectionTheServerClosedWhileIdle(t *testing.T) {
	t.Parallel()
	closed := make(chan struct{}, 4)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
		}
	}))
	srv.Config.IdleTimeout = 20 * time.Millisecond
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.Start()
	defer srv.Close()

	ctx := context.Background()
	g := newLoadgen(srv.URL)
	cs, err := g.conns(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer closeConns(cs)
	for i := range 3 {
		<-closed // the server closed the idle connection
		if _, err := cs[0].do(ctx, http.MethodPost, "/jobs", []byte(`{}`), http.StatusCreated); err != nil {
			t.Fatalf("request %d after the server closed the idle connection: %v", i, err)
		}
	}
	if d := g.dials.Load(); d != 4 {
		t.Errorf("dialled %d times, want 4", d)
	}
}
