package beanstalkd

import (
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/beanstalkd/go-beanstalk"

	"github.com/delayq/delayq/cmd/delayq/internal/beanstalktest"
	"github.com/delayq/delayq/internal/testwait"
)

func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{{}, {Backend: newMemBackend(), MaxConns: -1}, {Backend: newMemBackend(), MaxJobSize: -1}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
}

// TestStalledClientsDoNotBlockOthers: a client that stalls holds only its own connection.
func TestStalledClientsDoNotBlockOthers(t *testing.T) {
	// Clients that send half a command line or half a body
	// and stop hold only their own connection.
	t.Run("half a command or body", func(t *testing.T) {
		addr := startServer(t, Config{Backend: newMemBackend()})
		dial(t, addr).write("put 0 0 1 5\r\nhe")
		dial(t, addr).write("use hal")
		dial(t, addr).write("reserve\r\n")
		c := dial(t, addr)
		c.write("use x\r\nput 0 0 1 1\r\nz\r\n")
		c.expect("USING x\r\n")
		c.expect("INSERTED 1\r\n")
	})

	// Wants a client that stalls in the middle of a command
	// line, or of a body, and one that sends a body far over the limit, to leave the others
	// answered at once.
	t.Run("others answered at once", func(t *testing.T) {
		addr := startServer(t, Config{Backend: newDelayqBackend(t)})
		half := dial(t, addr)
		_, _ = half.nc.Write([]byte("put 0 0 10 5"))
		body := dial(t, addr)
		_, _ = body.nc.Write([]byte("put 0 0 10 60000\r\n" + strings.Repeat("x", 1000)))
		huge := dial(t, addr)
		go func() {
			_ = huge.nc.SetWriteDeadline(time.Now().Add(conversationTimeout))
			_, _ = huge.nc.Write([]byte("put 0 0 10 3000000\r\n" + strings.Repeat("y", 3000000) + "\r\n"))
		}()
		c := dial(t, addr)
		start := time.Now()
		for range 20 {
			if r := c.do("put 0 0 10 1", "z"); !strings.HasPrefix(r, "INSERTED") {
				t.Fatalf("put: %q", r)
			}
			if r := c.do("reserve-with-timeout 0"); !strings.HasPrefix(r, "RESERVED") {
				t.Fatalf("reserve: %q", r)
			}
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("20 puts and reserves took %v beside stalled clients", d)
		}
		if r := huge.read(conversationTimeout); r != "JOB_TOO_BIG\r\n" {
			t.Errorf("a body over the limit: %q; want JOB_TOO_BIG", r)
		}
		_, _ = half.nc.Write([]byte("\r\nhello\r\n"))
		if r := half.read(conversationTimeout); !strings.HasPrefix(r, "INSERTED") {
			t.Errorf("the half command, finished: %q", r)
		}
	})
}

// TestMaxConnsRefusesOneMore: a connection over the limit is closed at once; once one
// closes, a new one is served.
func TestMaxConnsRefusesOneMore(t *testing.T) {
	addr := startServer(t, Config{Backend: newMemBackend(), MaxConns: 2})
	a, b := dial(t, addr), dial(t, addr)
	for _, c := range []*peer{a, b} {
		c.write("list-tube-used\r\n")
		c.expect("USING default\r\n")
	}
	dial(t, addr).expectClosed()
	a.write("quit\r\n")
	a.expectClosed()
	testwait.For(t, conversationTimeout, "a new connection served", func() bool {
		c := dial(t, addr)
		c.write("list-tube-used\r\n")
		line, err := c.tryRead(conversationTimeout)
		return err == nil && line == "USING default\r\n"
	})
}

// TestServeClosesConnectionsWhenStopped: ending Serve's context closes its connections.
func TestServeClosesConnectionsWhenStopped(t *testing.T) {
	srv, err := New(Config{Backend: newMemBackend()})
	if err != nil {
		t.Fatal(err)
	}
	ln := listen(t)
	stop := serve(t, srv, ln)
	c := dial(t, ln.Addr().String())
	c.write("reserve\r\n")
	c.write("use a\r\n") // read in the background while reserve waits
	if err := stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	c.expectClosed()
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
	ln := listen(t)
	stop := serve(t, srv, &flakyListener{Listener: ln, fails: 3})
	c := dial(t, ln.Addr().String())
	c.write("list-tube-used\r\n")
	c.expect("USING default\r\n")
	if err := stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// TestDrainingRefusesPuts: a draining server answers put with DRAINING and serves the rest,
// as beanstalkd does after SIGUSR1.
func TestDrainingRefusesPuts(t *testing.T) {
	real := beanstalktest.Start(t)
	if err := syscall.Kill(real.Pid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, conversationTimeout, "beanstalkd to drain", func() bool {
		return strings.Contains(converse(t, real.Addr(), []byte("stats\r\n")), "draining: true")
	})
	srv, err := New(Config{Backend: newDelayqBackend(t)})
	if err != nil {
		t.Fatal(err)
	}
	ln := listen(t)
	serve(t, srv, ln)
	srv.Drain()
	stream := "put 0 0 10 1\r\nx\r\nuse a\r\nreserve-with-timeout 0\r\n"
	want := converse(t, real.Addr(), []byte(stream))
	if got := converse(t, ln.Addr().String(), []byte(stream)); got != want {
		t.Errorf("beanstalkd: %q\nours:       %q", want, got)
	}
	if got := converse(t, ln.Addr().String(), []byte("stats\r\n")); !strings.Contains(got, "\ndraining: true\n") {
		t.Errorf("stats of a draining server:\n%s", got)
	}
}

// TestThousandsOfIdleConnections: thousands of connections that say nothing, or half a
// command, or wait in reserve, leave the server serving a new client in full on the delayq
// Backend, and stats counts them. The count is what the process's file limit allows (both
// ends of each connection are in this process), up to 2,000, and at least 100.
func TestThousandsOfIdleConnections(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	// At most 2,000: the race detector allows 8,128 goroutines in all, and each waiting
	// reserve has a few.
	n := int(min(2000, max(lim.Cur, 1200)/2-500))
	t.Logf("%d idle connections (file limit %d)", n, lim.Cur)
	addr := startServer(t, Config{Backend: newDelayqBackend(t)})
	idle := []string{"", "put 0 0 10 5\r\nhe", "use half", "reserve\r\n"}
	for i := range n {
		c, err := net.DialTimeout("tcp", addr, conversationTimeout)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		if s := idle[i%len(idle)]; s != "" {
			if _, err := c.Write([]byte(s)); err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
		}
	}
	// Each look is a connection of its own: the idle ones and it.
	want := "\ncurrent-connections: " + strconv.Itoa(n+1) + "\n"
	testwait.For(t, 30*time.Second, "stats to count every connection", func() bool {
		return strings.Contains(converse(t, addr, []byte("stats\r\n")), want)
	})
	c := dial(t, addr)
	c.write("use busy\r\nwatch busy\r\nput 0 0 10 2\r\nok\r\nreserve-with-timeout 5\r\ndelete 1\r\n")
	for _, want := range []string{"USING busy\r\n", "WATCHING 2\r\n", "INSERTED 1\r\n", "RESERVED 1 2\r\n", "ok\r\n", "DELETED\r\n"} {
		c.expect(want)
	}
}

// BenchmarkPutReserveDelete runs one job's life over one connection to a server on the delayq
// Backend: put, reserve, delete, each waiting for its reply (go test -bench PutReserveDelete
// -cpuprofile cpu.out ./cmd/delayq/internal/beanstalkd/ shows where the time goes).
func BenchmarkPutReserveDelete(b *testing.B) {
	c, err := beanstalk.Dial("tcp", startServer(b, Config{Backend: newDelayqBackend(b)}))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	body := make([]byte, 100)
	watch := beanstalk.NewTubeSet(c, "default")
	for b.Loop() {
		if _, err := c.Put(body, 1024, 0, time.Minute); err != nil {
			b.Fatal(err)
		}
		id, _, err := watch.Reserve(time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Delete(id); err != nil {
			b.Fatal(err)
		}
	}
}
