package beanstalkd

import (
	"context"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/beanstalkd/proto"
	"github.com/delayq/delayq/internal/beanstalktest"
)

// conversationTimeout bounds one exchange with a server.
const conversationTimeout = 5 * time.Second

// servers is a real beanstalkd and this package's server, to send the same bytes to.
type servers struct {
	real, ours string
}

// startServers starts a real beanstalkd and a Server on b, both on free loopback ports.
func startServers(t *testing.T, b proto.Backend) servers {
	t.Helper()
	return servers{real: beanstalktest.Start(t).Addr(), ours: startServer(t, Config{Backend: b})}
}

// startServer serves cfg on a free loopback port until the test ends.
func startServer(t testing.TB, cfg Config) string {
	t.Helper()
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// converse sends stream on a new connection, closes the sending side, and returns everything
// the server answers until it closes the connection.
func converse(t *testing.T, addr string, stream []byte) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, conversationTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(conversationTimeout))
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(stream)
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		werr <- err
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading from %s after %q: %v (got %q)", addr, clip(stream), err, got)
	}
	// A server that closes after quit may leave the write unfinished: that is not a failure.
	<-werr
	return string(got)
}

// ids matches the job ids in replies, which the two servers issue independently.
var ids = regexp.MustCompile(`(INSERTED|BURIED|RESERVED|FOUND) [0-9]+`)

// normalise replaces job ids with a placeholder.
func normalise(s string) string { return ids.ReplaceAllString(s, "$1 <id>") }

// compare sends stream to both servers and fails the test where the replies differ.
func (s servers) compare(t *testing.T, stream string) {
	t.Helper()
	want := normalise(converse(t, s.real, []byte(stream)))
	got := normalise(converse(t, s.ours, []byte(stream)))
	if got != want {
		t.Errorf("stream %q:\nbeanstalkd: %q\nours:       %q", clip([]byte(stream)), want, got)
	}
}

// clip shortens a long stream for a failure message.
func clip(b []byte) string {
	if len(b) <= 400 {
		return string(b)
	}
	return string(b[:400]) + "…(" + strconv.Itoa(len(b)) + " bytes)"
}

// line returns a command line of exactly n bytes, CRLF included, padded with 'a's.
func line(prefix string, n int) string {
	return prefix + strings.Repeat("a", n-len(prefix)-2) + "\r\n"
}
