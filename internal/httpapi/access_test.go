package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/access"
)

// testClock is a clock a test moves while a server reads it.
type testClock struct{ ns atomic.Int64 }

func (c *testClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *testClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// serveFrom sends a request to h as if from addr, with token as its bearer token (none when
// empty), and returns the answer.
func serveFrom(h http.Handler, addr, method, path, token string) *httptest.ResponseRecorder {
	return serveBody(h, addr, method, path, token, "")
}

// serveBody is serveFrom with a JSON body (none when empty).
func serveBody(h http.Handler, addr, method, path, token, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	r.RemoteAddr = addr
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func errorCode(w *httptest.ResponseRecorder) string {
	var body struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(w.Body.Bytes(), &body)
	return body.Error.Code
}

func TestWrongTokensAreThrottledPerAddress(t *testing.T) {
	t.Parallel()
	const right = "right-token-0123456789"
	clock := &testClock{}
	clock.ns.Store(time.Unix(1_000_000, 0).UnixNano())
	lim := access.NewLimiter()
	lim.SetClock(clock.now)
	e := newEnv(t, func(c *Config) { c.Tokens, c.Limiter = []string{right}, lim })
	const guesser, other = "192.0.2.1:40000", "192.0.2.2:40000"
	for i := range access.FreeFailures {
		if w := serveFrom(e.handler, guesser, "GET", "/v1/topics", "guess"); w.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i+1, w.Code)
		}
	}
	w := serveFrom(e.handler, guesser, "GET", "/v1/topics", "guess")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" || errorCode(w) != codeRateLimited {
		t.Fatalf("a wrong token after too many: %d, Retry-After %q, code %q; want 429, 1, %s",
			w.Code, w.Header().Get("Retry-After"), errorCode(w), codeRateLimited)
	}
	if w := serveFrom(e.handler, guesser, "GET", "/v1/topics", right); w.Code != http.StatusOK {
		t.Errorf("the right token from the throttled address: %d, want 200", w.Code)
	}
	if w := serveFrom(e.handler, other, "GET", "/v1/topics", right); w.Code != http.StatusOK {
		t.Errorf("the right token from another address: %d, want 200", w.Code)
	}
	if w := serveFrom(e.handler, other, "GET", "/v1/topics", "guess"); w.Code != http.StatusUnauthorized {
		t.Errorf("a first wrong token from another address: %d, want 401", w.Code)
	}
	clock.advance(time.Second)
	if w := serveFrom(e.handler, guesser, "GET", "/v1/topics", "guess"); w.Code != http.StatusUnauthorized {
		t.Errorf("a wrong token after the wait: %d, want 401", w.Code)
	}
	if w := serveFrom(e.handler, guesser, "GET", "/v1/topics", "guess"); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "2" {
		t.Errorf("the second wait: %d, Retry-After %q; want 429 and 2", w.Code, w.Header().Get("Retry-After"))
	}
	if w := serveFrom(e.handler, guesser, "GET", "/v1/topics", ""); w.Code != http.StatusUnauthorized {
		t.Errorf("no token at all from the throttled address: %d, want 401", w.Code)
	}
}
