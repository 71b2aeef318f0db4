package server

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// A server without tokens that listens beyond loopback says so at start-up, and keeps the Host
// check; on loopback, or with tokens, it says nothing.
func TestServerWarnsWhenOpenBeyondLoopback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		listen string
		tokens []string
		warn   bool
	}{
		{"0.0.0.0:7070", nil, true},
		{":7070", nil, true},
		{"[::]:7070", nil, true},
		{"10.1.2.3:7070", nil, true},
		{"queue.internal:7070", nil, true},
		{"127.0.0.1:7070", nil, false},
		{"127.0.0.2:7070", nil, false},
		{"[::1]:7070", nil, false},
		{"localhost:7070", nil, false},
		{"0.0.0.0:7070", []string{"a-token-of-enough-length"}, false},
	}
	for _, tt := range tests {
		var logs bytes.Buffer
		h, err := guard(&Config{Listen: tt.listen, Tokens: tt.tokens}, http.NotFoundHandler(), slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(logs.String(), "beyond loopback"); got != tt.warn {
			t.Errorf("--listen %s, %d tokens: warned %v, want %v:\n%s", tt.listen, len(tt.tokens), got, tt.warn, logs.String())
		}
		req, _ := http.NewRequest(http.MethodGet, "/v1/topics", nil)
		req.Host = "evil.example:7070"
		rec := &statusOnly{header: http.Header{}}
		h.ServeHTTP(rec, req)
		if refused := rec.status == http.StatusForbidden; refused != (tt.tokens == nil) {
			t.Errorf("--listen %s, %d tokens: a foreign Host got %d", tt.listen, len(tt.tokens), rec.status)
		}
	}
}

// statusOnly is a ResponseWriter that keeps the status.
type statusOnly struct {
	header http.Header
	status int
}

func (s *statusOnly) Header() http.Header         { return s.header }
func (s *statusOnly) WriteHeader(status int)      { s.status = status }
func (s *statusOnly) Write(b []byte) (int, error) { return len(b), nil }
