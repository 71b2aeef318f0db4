package bench

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestReviewLoadgenFollowsTheBaseURL drives a server whose API is under a path of the base URL,
// as behind a reverse proxy, and checks that a base URL the load generator cannot speak to is
// refused with an error that says so.
func TestReviewLoadgenFollowsTheBaseURL(t *testing.T) {
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

// TestReviewLoadgenRedialsAConnectionTheServerClosedWhileIdle lets the server close a
// keep-alive connection that sat idle past its idle timeout: the next request goes on a new
// connection, as with net/http's client, instead of failing on the closed one.
func TestReviewLoadgenRedialsAConnectionTheServerClosedWhileIdle(t *testing.T) {
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
