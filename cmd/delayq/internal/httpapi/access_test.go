package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/access"
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

// Every route of the table has an entry in the permissions table, and every entry is a route.
func TestEveryRouteHasAPermission(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, rt := range routes() {
		if _, ok := permissionOf(rt); !ok {
			t.Errorf("route %s %s has no entry in permissions", rt.method, rt.path)
		}
		seen[rt.method+" "+rt.path] = true
	}
	for key := range permissions {
		if !seen[key] {
			t.Errorf("permissions has %q, which is no route", key)
		}
	}
}

const testTokensFile = `{"tokens": [
	{"name": "ops", "token": "admin-token-0000000001", "role": "admin"},
	{"name": "on-call", "token": "reader-token-000000001", "role": "reader"},
	{"name": "checkout", "token_sha256": "SUM", "role": "producer", "topics": ["orders", "payments-*"]},
	{"name": "workers", "token": "consumer-token-0000001", "role": "consumer", "topics": ["orders"]}
]}`

func TestTokensOfARoleMayDoOnlyWhatItAllows(t *testing.T) {
	t.Parallel()
	const producer = "producer-token-0000001"
	sum := sha256.Sum256([]byte(producer))
	ps, err := access.ParseFile([]byte(strings.Replace(testTokensFile, "SUM", hex.EncodeToString(sum[:]), 1)))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *Config) { c.Keyring = access.NewKeyring(ps) })
	const addr = "192.0.2.9:5000"
	tokens := map[string]string{"admin": "admin-token-0000000001", "reader": "reader-token-000000001",
		"producer": producer, "consumer": "consumer-token-0000001"}
	job := `{"id": "j1"}`
	for _, c := range []struct {
		method, path, body string
		allowed            []string // the roles that may; the others get 403
	}{
		{"POST", "/v1/topics/orders/jobs", job, []string{"admin", "producer"}},
		{"POST", "/v1/topics/payments-eu/jobs/batch", `{"jobs": [{"id": "b1"}]}`, []string{"admin", "producer"}},
		{"GET", "/v1/topics/orders/jobs/j1", "", []string{"admin", "reader", "producer", "consumer"}},
		{"PATCH", "/v1/topics/orders/jobs/j1", `{"delay_ms": 1000}`, []string{"admin", "producer"}},
		{"POST", "/v1/topics/orders/reserve", `{"max": 1}`, []string{"admin", "consumer"}},
		{"GET", "/v1/topics/orders/dead", "", []string{"admin", "reader", "consumer"}},
		{"POST", "/v1/topics/orders/dead/requeue", `{"ids": ["none"]}`, []string{"admin", "consumer"}},
		{"GET", "/v1/topics", "", []string{"admin", "reader"}},
		{"GET", "/v1/topics/orders", "", []string{"admin", "reader"}},
		{"GET", "/metrics", "", []string{"admin", "reader"}},
		{"GET", "/v1/schedules", "", []string{"admin", "reader"}},
		{"GET", "/v1/openapi.json", "", []string{"admin", "reader", "producer", "consumer"}},
		{"POST", "/v1/topics/orders/pause", "", []string{"admin"}},
		{"POST", "/v1/topics/orders/resume", "", []string{"admin"}},
		{"DELETE", "/v1/topics/payments-eu/jobs/b1", "", []string{"admin", "producer"}},
		// Out of the producer's and the consumer's topics.
		{"POST", "/v1/topics/other/jobs", job, []string{"admin"}},
		{"POST", "/v1/topics/other/reserve", `{"max": 1}`, []string{"admin"}},
		{"GET", "/v1/topics/payments-eu/jobs/b1", "", []string{"admin", "reader", "producer"}},
	} {
		for _, role := range []string{"reader", "producer", "consumer", "admin"} {
			w := serveBody(e.handler, addr, c.method, c.path, tokens[role], c.body)
			allowed := slices.Contains(c.allowed, role)
			if allowed == (w.Code == http.StatusForbidden) {
				t.Errorf("%s %s as %s: %d %s; want allowed %v", c.method, c.path, role, w.Code, w.Body, allowed)
				continue
			}
			if !allowed && (errorCode(w) != codePermission || strings.Contains(w.Body.String(), tokens[role])) {
				t.Errorf("%s %s as %s: code %q, body %s; want %s without the token", c.method, c.path, role, errorCode(w), w.Body, codePermission)
			}
		}
	}
	w := serveBody(e.handler, addr, "POST", "/v1/topics/other/jobs", producer, job)
	for _, want := range []string{`checkout`, `producer`, `other`} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("the refusal does not name %s: %s", want, w.Body)
		}
	}
}
