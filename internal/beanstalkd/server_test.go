package beanstalkd

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/beanstalktest"
	"github.com/delayq/delayq/internal/testwait"
)

// client is a test connection that reads replies line by line.
type client struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, conversationTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(conversationTimeout))
	return &client{t: t, c: c, br: bufio.NewReader(c)}
}

func (c *client) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.c, s); err != nil {
		c.t.Fatal(err)
	}
}

// expect reads one reply line and fails unless it is want.
func (c *client) expect(want string) {
	c.t.Helper()
	got, err := c.br.ReadString('\n')
	if err != nil || got != want {
		c.t.Fatalf("got %q, %v; want %q", got, err, want)
	}
}

// expectClosed fails unless the server closes the connection.
func (c *client) expectClosed() {
	c.t.Helper()
	if b, err := c.br.ReadByte(); err == nil {
		c.t.Fatalf("read %q, want the connection closed", b)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{{}, {Backend: newMemBackend(), MaxConns: -1}, {Backend: newMemBackend(), MaxJobSize: -1}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
}

// TestStalledClientDoesNotBlockOthers: clients that send half a command line or half a body
// and stop hold only their own connection.
func TestStalledClientDoesNotBlockOthers(t *testing.T) {
	addr := startServer(t, Config{Backend: newMemBackend()})
	dial(t, addr).send("put 0 0 1 5\r\nhe")
	dial(t, addr).send("use hal")
	dial(t, addr).send("reserve\r\n")
	c := dial(t, addr)
	c.send("use x\r\nput 0 0 1 1\r\nz\r\n")
	c.expect("USING x\r\n")
	c.expect("INSERTED 1\r\n")
}

// TestMaxConnsRefusesOneMore: a connection over the limit is closed at once; once one
// closes, a new one is served.
func TestMaxConnsRefusesOneMore(t *testing.T) {
	addr := startServer(t, Config{Backend: newMemBackend(), MaxConns: 2})
	a, b := dial(t, addr), dial(t, addr)
	for _, c := range []*client{a, b} {
		c.send("list-tube-used\r\n")
		c.expect("USING default\r\n")
	}
	dial(t, addr).expectClosed()
	a.send("quit\r\n")
	a.expectClosed()
	testwait.For(t, conversationTimeout, "a new connection served", func() bool {
		c := dial(t, addr)
		c.send("list-tube-used\r\n")
		line, err := c.br.ReadString('\n')
		return err == nil && line == "USING default\r\n"
	})
}

// TestServeClosesConnectionsWhenStopped: ending Serve's context closes its connections.
func TestServeClosesConnectionsWhenStopped(t *testing.T) {
	srv, err := New(Config{Backend: newMemBackend()})
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
	c := dial(t, ln.Addr().String())
	c.send("reserve\r\n")
	c.send("use a\r\n") // read in the background while reserve waits
	cancel()
	c.expectClosed()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// TestMaxJobSizeMatchesBeanstalkd compares JOB_TOO_BIG at a small limit with beanstalkd -z.
func TestMaxJobSizeMatchesBeanstalkd(t *testing.T) {
	s := servers{
		real: beanstalktest.Start(t, beanstalktest.WithMaxJobSize(10)).Addr(),
		ours: startServer(t, Config{Backend: newMemBackend(), MaxJobSize: 10}),
	}
	for _, stream := range []string{"put 0 0 1 10\r\n0123456789\r\n", "put 0 0 1 11\r\n0123456789a\r\nuse a\r\n",
		"put 0 0 1 11\r\n0123456789a\r\n", "put 0 0 1 12 x\r\n" + strings.Repeat("y", 14) + "use a\r\n"} {
		s.compare(t, stream)
	}
}

// TestWaitingReserveRepliesLikeBeanstalkd sends streams that leave a client waiting in
// reserve (the sending side stays open) and wants the same replies, with their timing: a
// reserve that finds a held job's TTR about to run out answers DEADLINE_SOON, at once or
// when that moment comes; reserve-with-timeout answers TIMED_OUT when its time is up.
func TestWaitingReserveRepliesLikeBeanstalkd(t *testing.T) {
	s := startServers(t, newMemBackend())
	cases := []struct {
		stream  string
		replies []string
	}{
		{"put 0 0 1 1\r\na\r\nreserve\r\nreserve\r\n", []string{"INSERTED", "RESERVED", "a", "DEADLINE_SOON"}},
		// Tubes of their own: the job of the first case goes back to default when it ends.
		{"use w1\r\nwatch w1\r\nignore default\r\nput 0 0 2 1\r\nb\r\nreserve-with-timeout 5\r\nreserve\r\n",
			[]string{"USING", "WATCHING", "WATCHING", "INSERTED", "RESERVED", "b", "DEADLINE_SOON"}},
		{"use w2\r\nwatch w2\r\nignore default\r\nput 0 0 2 1\r\nc\r\nreserve\r\ntouch 0\r\nreserve-with-timeout 0\r\n",
			[]string{"USING", "WATCHING", "WATCHING", "INSERTED", "RESERVED", "c", "NOT_FOUND", "TIMED_OUT"}},
		{"watch w3\r\nignore default\r\nreserve-with-timeout 1\r\n", []string{"WATCHING", "WATCHING", "TIMED_OUT"}},
	}
	for _, c := range cases {
		var wg sync.WaitGroup
		got := make([][]string, 2)
		took := make([]time.Duration, 2)
		for i, addr := range []string{s.real, s.ours} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], took[i] = replyWords(t, addr, c.stream, len(c.replies))
			}()
		}
		wg.Wait()
		for i, who := range []string{"beanstalkd", "ours"} {
			if strings.Join(got[i], " ") != strings.Join(c.replies, " ") {
				t.Errorf("%s, stream %q: got %q, want %q", who, c.stream, got[i], c.replies)
			}
		}
		if d := took[1] - took[0]; d > 300*time.Millisecond || d < -300*time.Millisecond {
			t.Errorf("stream %q: beanstalkd answered in %v, ours in %v", c.stream, took[0], took[1])
		}
	}
}

// replyWords sends stream and reads n reply lines, keeping each one's first word, and how
// long the last one took.
func replyWords(t *testing.T, addr, stream string, n int) ([]string, time.Duration) {
	c, err := net.DialTimeout("tcp", addr, conversationTimeout)
	if err != nil {
		t.Error(err)
		return nil, 0
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(conversationTimeout))
	start := time.Now()
	if _, err := io.WriteString(c, stream); err != nil {
		t.Error(err)
		return nil, 0
	}
	br := bufio.NewReader(c)
	var words []string
	for range n {
		line, err := br.ReadString('\n')
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Errorf("%s: %v", addr, err)
			}
			break
		}
		words = append(words, strings.Fields(line + " ")[0])
	}
	return words, time.Since(start)
}

// flakyListener fails its first Accept calls, as a listener out of file descriptors does.
type flakyListener struct {
	net.Listener
	mu    sync.Mutex
	fails int
}

func (l *flakyListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	fail := l.fails > 0
	l.fails--
	l.mu.Unlock()
	if fail {
		return nil, errors.New("accept: too many open files")
	}
	return l.Listener.Accept()
}

// TestServeOutlivesAcceptErrors: an accept error other than a closed listener is waited out.
func TestServeOutlivesAcceptErrors(t *testing.T) {
	srv, err := New(Config{Backend: newMemBackend(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, &flakyListener{Listener: ln, fails: 3}) }()
	c := dial(t, ln.Addr().String())
	c.send("list-tube-used\r\n")
	c.expect("USING default\r\n")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
