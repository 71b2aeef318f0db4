package redistest

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// proxyBufSize is the size of each of a connection's four buffers, and so
	// the longest RESP line (header, simple string, inline command) accepted.
	proxyBufSize = 64 << 10
	// maxInFlight bounds a connection's commands waiting for their replies.
	maxInFlight = 1024
	dialTimeout = 5 * time.Second
)

// Proxy is a TCP proxy between Redis clients and one redis-server that reads
// the RESP2 and RESP3 traffic in both directions, so that it pairs every
// reply with its command and can inject a fault at an exact point of a
// conversation: a reply lost after Redis ran the command (DropReplyOnce,
// DropReplies), or the network going away (Outage, CutAll).
//
// A connection that sends SUBSCRIBE, SSUBSCRIBE, PSUBSCRIBE or MONITOR is
// passed through untouched from then on: its messages answer no command.
// CLIENT REPLY OFF and SKIP, which suppress replies, are not supported.
//
// Its methods are safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	ctx    context.Context // cancelled by close; bounds dials to the target
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop and every connection's goroutines

	mu        sync.Mutex
	closed    bool
	conns     map[*proxyConn]struct{}
	drops     []*dropFault
	downUntil time.Time      // connections are refused until then
	timers    []*time.Timer  // pending ends of outages, stopped by close
	forwarded map[string]int // commands forwarded, by upper-case name
	accepted  int
	dropped   int // replies dropped after Redis answered
}

// dropFault is one armed DropReplyOnce or DropReplies.
type dropFault struct {
	match func(args []string) bool
	// fired, for DropReplyOnce, is closed once the reply was dropped; nil for DropReplies,
	// whose fault stays armed until its timer removes it.
	fired chan struct{}
}

// NewProxy starts a proxy on a free loopback port that forwards every
// connection to target ("host:port"). It is closed, with all its
// connections, when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: proxy listen: %v", err)
	}
	p := &Proxy{
		target:    target,
		ln:        ln,
		conns:     map[*proxyConn]struct{}{},
		forwarded: map[string]int{},
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(p.close)
	return p
}

// Addr returns the proxy's "127.0.0.1:port" address, for clients to dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// DropReplyOnce arms a one-shot fault: the next command, on any connection,
// for which match returns true is forwarded to Redis, which runs it, but its
// reply is never delivered. The client gets every reply before it and then
// end of file where it expects that reply. Commands the client pipelined
// after the matching one never reach Redis, so what ran is deterministic.
//
// match gets the command's arguments, the name first as the client spelled
// it (go-redis sends lower case, "incr"). It is called with the proxy's lock
// held and must not call the Proxy's methods. Faults armed together (by this
// method or DropReplies) are tried in the order they were armed; one armed
// by this method fires at most once.
//
// The returned channel is closed once Redis has answered the command and
// both sides of the connection are closed. If the connection is cut before
// Redis answers, the fault is spent and the channel is never closed.
func (p *Proxy) DropReplyOnce(match func(args []string) bool) <-chan struct{} {
	d := &dropFault{match: match, fired: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drops = append(p.drops, d)
	return d.fired
}

// DropReplies arms a fault for d: every command, on any connection, for
// which match returns true is forwarded to Redis, which runs it, and its reply
// is dropped as DropReplyOnce drops one. A client that sends the command
// again within d, as go-redis does after end of file, loses that reply too,
// so that its caller sees an error although Redis ran the command each time.
// Commands forwarded after d has passed are answered as usual; the reply of
// one forwarded just before may still be dropped.
//
// match is called as DropReplyOnce's is, in the order the faults were armed.
// DropReplies returns at once; the returned channel is closed when d has
// passed.
func (p *Proxy) DropReplies(match func(args []string) bool, d time.Duration) <-chan struct{} {
	f := &dropFault{match: match}
	end := make(chan struct{})
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drops = append(p.drops, f)
	p.timers = append(p.timers, time.AfterFunc(d, func() {
		p.mu.Lock()
		p.drops = slices.DeleteFunc(p.drops, func(g *dropFault) bool { return g == f })
		p.mu.Unlock()
		close(end)
	}))
	return end
}

// Dropped returns how many replies the proxy has dropped after Redis
// answered them, by DropReplyOnce and DropReplies.
func (p *Proxy) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// Outage closes every open connection, both sides at once, and for d closes
// every new connection at once, so that clients fail fast instead of
// hanging; then the proxy serves normally again. It returns at once; the
// returned channel is closed when d has passed. Overlapping outages last
// until the last one ends.
func (p *Proxy) Outage(d time.Duration) <-chan struct{} {
	end := make(chan struct{})
	p.cut(func() {
		if until := time.Now().Add(d); until.After(p.downUntil) {
			p.downUntil = until
		}
		p.timers = append(p.timers, time.AfterFunc(d, func() { close(end) }))
	})
	return end
}

// CutAll closes every open connection, both sides, and goes on accepting
// new ones.
func (p *Proxy) CutAll() { p.cut(func() {}) }

// Forwarded returns how many commands named name (in any case) the proxy has
// forwarded to Redis over all its connections. Commands sent by a connection
// in pub/sub mode are not counted.
func (p *Proxy) Forwarded(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.forwarded[strings.ToUpper(name)]
}

// Conns returns how many connections the proxy has accepted and served, not
// counting those refused during an outage.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// cut applies change to the proxy's state and closes every open connection;
// the lock makes a connection being set up either see change or be closed.
func (p *Proxy) cut(change func()) {
	p.mu.Lock()
	change()
	conns := slices.Collect(maps.Keys(p.conns))
	clear(p.conns)
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// close stops the proxy and waits until all its goroutines have returned.
func (p *Proxy) close() {
	p.cut(func() {
		p.closed = true
		for _, t := range p.timers {
			t.Stop()
		}
	})
	p.cancel()
	_ = p.ln.Close()
	p.wg.Wait()
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // Only close makes a TCP listener fail for good.
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

// proxyConn is one client connection and the proxy's connection to Redis.
type proxyConn struct {
	client, upstream net.Conn
	done             chan struct{} // closed by close
	closeOnce        sync.Once
}

// close closes both sides; it may be called any number of times.
func (c *proxyConn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.client.Close()
		_ = c.upstream.Close()
	})
}

// pending is a command forwarded to Redis whose reply has not come back yet.
type pending struct {
	drop        *dropFault // the reply is to be dropped
	passThrough bool       // the command starts pub/sub or MONITOR mode
}

// serve proxies one connection until either side closes it.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	ctx, cancel := context.WithTimeout(p.ctx, dialTimeout)
	up, err := (&net.Dialer{}).DialContext(ctx, "tcp", p.target)
	cancel()
	if err != nil {
		_ = client.Close()
		return
	}
	c := &proxyConn{client: client, upstream: up, done: make(chan struct{})}
	defer c.close()
	p.mu.Lock()
	refuse := p.closed || time.Now().Before(p.downUntil)
	if !refuse {
		p.conns[c] = struct{}{}
		p.accepted++
	}
	p.mu.Unlock()
	if refuse {
		return
	}
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	queue := make(chan pending, maxInFlight)
	repliesDone := make(chan struct{})
	go func() {
		defer close(repliesDone)
		p.forwardReplies(c, queue)
	}()
	if err := p.forwardCommands(c, queue); err != nil {
		c.close()
	}
	<-repliesDone
}

// forwardCommands copies commands from the client to Redis, queueing each
// one for forwardReplies before Redis can possibly answer it. It returns nil
// when it stops for a dropped reply, leaving forwardReplies to close.
func (p *Proxy) forwardCommands(c *proxyConn, queue chan<- pending) error {
	r := bufio.NewReaderSize(c.client, proxyBufSize)
	w := bufio.NewWriterSize(c.upstream, proxyBufSize)
	for {
		args, raw, err := readCommand(r)
		if err != nil {
			return err
		}
		if len(args) == 0 {
			continue // Redis ignores empty commands and sends no reply.
		}
		name := strings.ToUpper(args[0])
		cmd := pending{passThrough: name == "SUBSCRIBE" || name == "SSUBSCRIBE" || name == "PSUBSCRIBE" || name == "MONITOR"}
		p.mu.Lock()
		p.forwarded[name]++
		for i, d := range p.drops {
			if d.match(args) {
				cmd.drop = d
				if d.fired != nil {
					p.drops = append(p.drops[:i], p.drops[i+1:]...)
				}
				break
			}
		}
		p.mu.Unlock()
		if len(queue) == cap(queue) {
			// Redis must see the queued commands to answer them and make room.
			if err := w.Flush(); err != nil {
				return err
			}
		}
		select {
		case queue <- cmd:
		case <-c.done:
			return net.ErrClosed
		}
		if _, err := w.Write(raw); err != nil {
			return err
		}
		if cmd.drop != nil || cmd.passThrough || r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
		switch {
		case cmd.drop != nil:
			return nil
		case cmd.passThrough:
			_, err := io.Copy(c.upstream, r)
			return cmp.Or(err, io.EOF)
		}
	}
}

// forwardReplies copies Redis's replies to the client, one value at a time,
// pairing each with the command forwardCommands queued for it.
func (p *Proxy) forwardReplies(c *proxyConn, queue <-chan pending) {
	defer c.close()
	r := bufio.NewReaderSize(c.upstream, proxyBufSize)
	w := bufio.NewWriterSize(c.client, proxyBufSize)
	var head *pending
	for {
		typ, err := r.Peek(1)
		if err != nil {
			_ = w.Flush()
			return
		}
		if head == nil {
			// A command's entry is queued before Redis gets the command.
			select {
			case cmd := <-queue:
				head = &cmd
			default:
			}
		}
		switch {
		case head != nil && head.passThrough:
			if w.Flush() == nil {
				_, _ = io.Copy(c.client, r)
			}
			return
		case typ[0] == '>' || head == nil:
			// A RESP3 push answers no command.
			err = copyValue(w, r)
		case head.drop != nil:
			if w.Flush() != nil {
				return
			}
			// End of file (FIN, not a reset) right where the reply was due.
			if tc, ok := c.client.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			if copyValue(io.Discard, r) == nil {
				c.close()
				p.mu.Lock()
				p.dropped++
				p.mu.Unlock()
				if head.drop.fired != nil {
					close(head.drop.fired)
				}
			}
			return
		default:
			err = copyValue(w, r)
			head = nil
		}
		if err != nil || (r.Buffered() == 0 && w.Flush() != nil) {
			return
		}
	}
}

// readCommand reads one command, in multibulk form or inline, and returns
// its arguments and the bytes to forward. Empty commands have no arguments.
func readCommand(r *bufio.Reader) (args []string, raw []byte, err error) {
	line, err := readLine(r)
	if err != nil {
		return nil, nil, err
	}
	if line[0] != '*' {
		// An inline command, as typed into telnet.
		raw = append([]byte(nil), line...)
		return strings.Fields(string(line)), raw, nil
	}
	n, err := respLen(line)
	if err != nil || n <= 0 {
		return nil, nil, err // Redis ignores "*0" and "*-1".
	}
	args = make([]string, 0, min(n, 1024))
	for range n {
		line, err := readLine(r)
		if err != nil {
			return nil, nil, err
		}
		if line[0] != '$' {
			return nil, nil, fmt.Errorf("expected a bulk string, got %q", line)
		}
		size, err := respLen(line)
		if err != nil || size < 0 {
			return nil, nil, fmt.Errorf("bad bulk string length %q", line)
		}
		// Grow with the data that arrives, not with the length announced.
		var arg strings.Builder
		if _, err := io.CopyN(&arg, r, int64(size)+2); err != nil {
			return nil, nil, err
		}
		if !strings.HasSuffix(arg.String(), "\r\n") {
			return nil, nil, errors.New("bulk string not followed by CRLF")
		}
		args = append(args, arg.String()[:size])
	}
	// Clients write the canonical encoding, so re-encoding forwards the same bytes.
	return args, encodeCommand(args), nil
}

// copyValue copies one RESP2 or RESP3 value from r to w, streaming bulk
// strings instead of holding them in memory.
func copyValue(w io.Writer, r *bufio.Reader) error {
	for todo := 1; todo > 0; todo-- {
		line, err := readLine(r)
		if err != nil {
			return err
		}
		if len(line) < 3 || line[len(line)-2] != '\r' {
			return fmt.Errorf("malformed RESP line %q", line)
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
		if strings.IndexByte("+-:_,#(", line[0]) >= 0 {
			continue // The line is the whole value.
		}
		n, err := respLen(line)
		if err != nil {
			return err
		}
		switch line[0] {
		case '$', '!', '=':
			if n >= 0 { // not a RESP2 null
				if _, err := io.CopyN(w, r, int64(n)+2); err != nil {
					return err
				}
			}
		case '*', '~', '>':
			todo += max(n, 0)
		case '%':
			todo += 2 * max(n, 0)
		case '|':
			// An attribute map precedes the value it describes.
			todo += 2*max(n, 0) + 1
		default:
			return fmt.Errorf("unknown RESP type in %q", line)
		}
	}
	return nil
}

// readLine returns the next line, up to and including its '\n'; the slice
// is valid until the next read from r.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("RESP line longer than %d bytes", r.Size())
	}
	return line, err
}

// respLen parses the length in a "*3\r\n"-style header; -1 means null.
func respLen(line []byte) (int, error) {
	n, err := strconv.Atoi(strings.TrimRight(string(line[1:]), "\r\n"))
	if err != nil || n < -1 || n > math.MaxInt32 {
		return 0, fmt.Errorf("bad RESP length in %q", line)
	}
	return n, nil
}
