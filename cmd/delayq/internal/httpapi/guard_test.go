package httpapi

import (
	"github.com/prometheus/client_golang/prometheus"

	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// guarded is an env's API behind a Guard of cfg, served at url.
type guarded struct {
	*env
	url string
}

func newGuarded(t *testing.T, cfg GuardConfig, edit func(*Config)) *guarded {
	t.Helper()
	e := newEnv(t, edit)
	g, err := NewGuard(cfg, e.handler)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return &guarded{env: e, url: srv.URL}
}

// send sends a request with host as its Host (empty: the server's address) and the headers,
// given as name, value pairs.
func (g *guarded) send(method, path, host, body string, header ...string) response {
	g.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(g.t.Context(), method, g.url+path, rd)
	if err != nil {
		g.t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatalf("%s %s (Host %q): %v", method, path, host, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		g.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

func (g *guarded) paused(topic string) bool {
	g.t.Helper()
	st, err := g.client.Stats(g.t.Context(), topic)
	if err != nil {
		g.t.Fatalf("Stats(%q): %v", topic, err)
	}
	return st.Paused
}

// A server without tokens answers its loopback names, IP addresses, its listen address and the
// names it is given: a page on a name rebound to its address (DNS rebinding) reads nothing.
func TestOpenServerRefusesForeignHost(t *testing.T) {
	t.Parallel()
	g := newGuarded(t, GuardConfig{CheckHost: true, Listen: "delayq-box:7070", AllowedHosts: []string{"Queue.Internal"}}, nil)
	g.enqueue("orders", map[string]any{"id": "secret-order"})
	for _, host := range []string{"evil.example:7070", "evil.example", "localhost.evil.example", "127.0.0.1.evil.example:7070", "queue.internal.evil.example"} {
		a := g.send("GET", "/v1/topics/orders/jobs/secret-order", host, "")
		msg := a.wantError(t, http.StatusForbidden, codePermission).Message
		if want := "--allowed-host " + hostName(host); !strings.Contains(msg, want) {
			t.Errorf("Host %q: the refusal %q does not say %q", host, msg, want)
		}
		if strings.Contains(string(a.body), `"id":"secret-order"`) {
			t.Errorf("Host %q: the refusal shows the job: %s", host, a.body)
		}
	}
	for _, host := range []string{"localhost:7070", "LOCALHOST", "localhost.", "127.0.0.1:7070", "127.8.9.10", "[::1]:7070", "[::1]",
		"192.0.2.10:7070", "[2001:db8::1]:80", "delayq-box:7070", "queue.internal", "QUEUE.internal.:8080"} {
		g.send("GET", "/v1/topics/orders/jobs/secret-order", host, "").want(t, http.StatusOK)
	}
	// Probes reach /healthz and /readyz by any name.
	for _, path := range []string{"/healthz", "/readyz"} {
		g.send("GET", path, "evil.example:7070", "").want(t, http.StatusOK)
	}
	// Nothing changes through a foreign Host either.
	g.send("POST", "/v1/topics/orders/pause", "evil.example:7070", "").wantError(t, http.StatusForbidden, codePermission)
	if g.paused("orders") {
		t.Error("a request with a foreign Host paused the topic")
	}
}

// With tokens, the tokens protect the server: any Host is served to a request that has one.
func TestServerWithTokensServesAnyHost(t *testing.T) {
	t.Parallel()
	g := newGuarded(t, GuardConfig{}, func(c *Config) { c.Tokens = []string{"a-token-of-enough-length"} })
	g.send("GET", "/v1/topics", "evil.example:7070", "").wantError(t, http.StatusUnauthorized, codeUnauthenticated)
	g.send("GET", "/v1/topics", "queue.example.com", "", "Authorization", "Bearer a-token-of-enough-length").want(t, http.StatusOK)
}

// A browser page of another origin can change nothing: its POSTs are refused by what the
// browser says of their origin, while clients that are not browsers, and pages of the server
// itself, are served. A request that needs a JSON body and has another type stays 415.
func TestCrossOriginRequestsCannotChangeState(t *testing.T) {
	t.Parallel()
	g := newGuarded(t, GuardConfig{CheckHost: true}, nil)
	self := strings.TrimPrefix(g.url, "http://")
	_, port, _ := net.SplitHostPort(self)
	tests := []struct {
		name   string
		header []string
		refuse bool
	}{
		{"another site", []string{"Sec-Fetch-Site", "cross-site"}, true},
		{"another port of the same host", []string{"Sec-Fetch-Site", "same-site", "Origin", "http://127.0.0.1:1"}, true},
		{"an old browser on another origin", []string{"Origin", "http://evil.example"}, true},
		{"an old browser on another name of the server", []string{"Origin", "http://localhost:" + port}, true},
		{"the server's own page", []string{"Sec-Fetch-Site", "same-origin", "Origin", "http://" + self}, false},
		{"an old browser on the server's own page", []string{"Origin", "http://" + self}, false},
		{"typed in the address bar", []string{"Sec-Fetch-Site", "none"}, false},
		{"curl", nil, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topic := fmt.Sprintf("cors-%d", i)
			g.enqueue(topic, map[string]any{"id": "j"})
			pause := g.send("POST", "/v1/topics/"+topic+"/pause", "", "", tt.header...)
			reserve := g.send("POST", "/v1/topics/"+topic+"/reserve", "", `{"wait_ms": 0}`, tt.header...)
			text := g.send("POST", "/v1/topics/"+topic+"/jobs", "", "", append([]string{"Content-Type", "text/plain"}, tt.header...)...)
			if tt.refuse {
				pause.wantError(t, http.StatusForbidden, codePermission)
				reserve.wantError(t, http.StatusForbidden, codePermission)
				text.wantError(t, http.StatusForbidden, codePermission)
				if st, err := g.client.Stats(t.Context(), topic); err != nil || st.Paused || st.Ready != 1 {
					t.Errorf("after refused requests: %+v, %v; want unpaused with its job ready", st, err)
				}
				return
			}
			pause.want(t, http.StatusOK)
			reserve.want(t, http.StatusOK)
			text.wantError(t, http.StatusUnsupportedMediaType, codeMediaType)
			if !g.paused(topic) {
				t.Error("the pause was not applied")
			}
		})
	}
	// Reading is not changing: a browser keeps another origin's page from seeing the answer.
	g.send("GET", "/v1/topics", "", "", "Sec-Fetch-Site", "cross-site").want(t, http.StatusOK)
}

// Every answer, of the API as of the guard, tells browsers not to guess its type.
func TestEveryAnswerSaysNosniff(t *testing.T) {
	t.Parallel()
	g := newGuarded(t, GuardConfig{CheckHost: true}, nil)
	for _, a := range []response{
		g.send("GET", "/v1/topics", "", ""),
		g.send("GET", "/no/such/path", "", ""),
		g.send("GET", "/v1/topics/t/jobs/none", "", ""),
		g.send("POST", "/v1/topics/t/jobs", "", `{"nope": 1}`),
		g.send("GET", "/v1/topics", "evil.example", ""),
		g.send("POST", "/v1/topics/t/pause", "", "", "Sec-Fetch-Site", "cross-site"),
		g.send("GET", "/healthz", "", ""),
		g.send("GET", "/metrics", "", ""),
		g.send("GET", "/openapi.json", "", ""),
	} {
		if got := a.header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("an answer %d says X-Content-Type-Options %q: %.200s", a.status, got, a.body)
		}
	}
}

// A client that writes its whole request before it reads the answer (as Python's urllib does)
// gets the 413 of a body over the limit, not a reset connection. Its small send buffer stands
// for a network slower than loopback: it cannot hold the body while the server reads none.
func TestOversizedBodyAnswerReachesAClientThatWritesItAll(t *testing.T) {
	t.Parallel()
	g := newGuarded(t, GuardConfig{CheckHost: true}, nil)
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(g.url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := conn.(*net.TCPConn).SetWriteBuffer(16 << 10); err != nil {
				t.Fatal(err)
			}
			if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
				t.Fatal(err)
			}
			const size = 2 << 20
			framing := fmt.Sprintf("Content-Length: %d\r\n", size)
			if chunked {
				framing = "Transfer-Encoding: chunked\r\n"
			}
			req := "POST /v1/topics/big/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + framing + "\r\n"
			body := `{"body": "` + strings.Repeat("x", size-len(`{"body": ""}`)) + `"}`
			if chunked {
				body = fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)
			}
			if _, err := io.WriteString(conn, req+body); err != nil {
				t.Fatalf("writing the request: %v", err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d, want 413", resp.StatusCode)
			}
		})
	}
	if n, err := g.client.Stats(context.Background(), "big"); err == nil && n.Ready+n.Delayed > 0 {
		t.Errorf("an oversized job was stored: %+v", n)
	}
}

// Allowed hosts are host names: a value with a scheme, port, path or wildcard is refused.
func TestGuardRefusesAllowedHostsThatAreNotNames(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"", "http://queue.internal", "queue.internal:7070", "queue.internal/", "*.internal", "a b"} {
		if _, err := NewGuard(GuardConfig{CheckHost: true, AllowedHosts: []string{h}}, http.NotFoundHandler()); err == nil {
			t.Errorf("allowed host %q accepted", h)
		}
	}
	for _, h := range []string{"queue.internal", "QUEUE", "10.0.0.1", "::1"} {
		if _, err := NewGuard(GuardConfig{CheckHost: true, AllowedHosts: []string{h}}, http.NotFoundHandler()); err != nil {
			t.Errorf("allowed host %q: %v", h, err)
		}
	}
}

// On a server with tokens, /metrics served without a token (--metrics-public) answers only the
// server's own names: a page on a rebound name cannot read the topics from it; the API's
// routes, which need a token, answer any Host.
func TestPublicMetricsAnswerOnlyTheServersNames(t *testing.T) {
	t.Parallel()
	g := newGuarded(t, GuardConfig{PublicPaths: []string{"/metrics"}}, func(c *Config) {
		c.Tokens = []string{"a-token-of-enough-length"}
		c.MetricsPublic = true
		c.Registry = prometheus.NewRegistry()
	})
	g.send("GET", "/metrics", "evil.example:7070", "").wantError(t, http.StatusForbidden, codePermission)
	g.send("GET", "/metrics", "localhost:7070", "").want(t, http.StatusOK)
	g.send("GET", "/metrics", "10.1.2.3:7070", "").want(t, http.StatusOK)
	g.send("GET", "/v1/topics", "queue.example.com", "", "Authorization", "Bearer a-token-of-enough-length").want(t, http.StatusOK)
}
