package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// loadgen drives a delayq server over HTTP/1.1 keep-alive connections. It sends request bodies
// built ahead of time and decodes only what it must (a reserve's ids and leases), so that its
// own CPU takes as little as it can from a machine it shares with the server and Redis: like
// wrk, each connection is driven by one goroutine that writes its request and reads the
// answer on the socket itself, where net/http's client hands every request to two goroutines
// of its own (a reader and a writer per connection).
type loadgen struct {
	addr   string // host:port to dial
	host   string // the Host header: the base URL's host
	prefix string // the base URL's path, which every request's path follows
	bad    error  // why the base URL is not one the load generator speaks to; dialling returns it
	dials  atomic.Int64
}

// newLoadgen returns a load generator for the server at base, an http:// URL whose path, if
// any, comes before the path of every request. A base URL of another kind makes every dial
// fail with an error that says so.
func newLoadgen(base string) *loadgen {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return &loadgen{bad: fmt.Errorf("the server's base URL %q: the load generator speaks only to http://host[:port][/path]", base)}
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return &loadgen{addr: addr, host: u.Host, prefix: strings.TrimRight(u.EscapedPath(), "/")}
}

// conn is one keep-alive connection, used by one caller at a time.
type conn struct {
	g   *loadgen
	nc  net.Conn // nil until dialled, and after the server closed it
	r   *bufio.Reader
	req []byte // the request being written
	buf bytes.Buffer
	// answered is when the last answer was read: a connection idle for less than
	// idleBeforeLook is not looked at before it is used again.
	answered time.Time
}

// idleBeforeLook is how long a connection must have been idle for do to look whether the
// server closed it. Servers close kept-alive connections after seconds of idleness, and the
// look is a system call: on a connection in steady use it would only add to the load
// generator's own CPU, which the server and Redis share.
const idleBeforeLook = 5 * time.Millisecond

// conns returns n connections, each opened with a GET /healthz so that no timed request pays
// for a dial.
func (g *loadgen) conns(ctx context.Context, n int) ([]*conn, error) {
	out := make([]*conn, n)
	for i := range out {
		out[i] = &conn{g: g}
	}
	err := each(n, func(i int) error {
		_, err := out[i].do(ctx, http.MethodGet, "/healthz", nil, http.StatusOK)
		return err
	})
	if err != nil {
		closeConns(out)
		return nil, err
	}
	return out, nil
}

// closeConns closes the connections of cs.
func closeConns(cs []*conn) {
	for _, c := range cs {
		c.close()
	}
}

func (c *conn) close() {
	if c.nc != nil {
		_ = c.nc.Close()
		c.nc = nil
	}
}

// dial opens the connection.
func (c *conn) dial(ctx context.Context) error {
	if c.g.bad != nil {
		return c.g.bad
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", c.g.addr)
	if err != nil {
		return err
	}
	c.g.dials.Add(1)
	c.nc = nc
	if c.r == nil {
		c.r = bufio.NewReaderSize(nc, 16<<10)
	} else {
		c.r.Reset(nc)
	}
	return nil
}

// do sends one request and returns the answer's body, which is valid until the next call; an
// answer with a status other than want is an error that quotes it. When ctx ends, the request
// in flight fails and the connection is closed.
func (c *conn) do(ctx context.Context, method, path string, body []byte, want int) ([]byte, error) {
	if c.nc != nil && time.Since(c.answered) >= idleBeforeLook && c.closedByServer() {
		c.close()
	}
	if c.nc == nil {
		if err := c.dial(ctx); err != nil {
			return nil, err
		}
	}
	nc := c.nc
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c.req = append(c.req[:0], method...)
	c.req = append(c.req, ' ')
	c.req = append(c.req, c.g.prefix...)
	c.req = append(c.req, path...)
	c.req = append(c.req, " HTTP/1.1\r\nHost: "...)
	c.req = append(c.req, c.g.host...)
	if body != nil {
		c.req = append(c.req, "\r\nContent-Type: application/json\r\nContent-Length: "...)
		c.req = strconv.AppendInt(c.req, int64(len(body)), 10)
	}
	c.req = append(c.req, "\r\n\r\n"...)
	c.req = append(c.req, body...)
	resp, err := c.roundTrip()
	c.answered = time.Now()
	if err != nil {
		c.close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.Close {
		c.close()
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(c.buf.Bytes()))
	}
	return c.buf.Bytes(), nil
}

// closedByServer reports whether the server closed the idle connection (say at its idle
// timeout) or sent on it unasked, so that a request written on it would fail: net/http's
// client learns that from the reader it keeps on every connection, this one from a look at the
// socket that does not wait.
func (c *conn) closedByServer() bool {
	if c.r.Buffered() > 0 {
		return true
	}
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	_ = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Data or the end of the stream (no error), or a reset: not a connection to write on.
		closed = err != syscall.EAGAIN && err != syscall.EWOULDBLOCK && err != syscall.EINTR
		return true
	})
	return closed
}

// roundTrip writes c.req and reads the answer, its body into c.buf.
func (c *conn) roundTrip() (*http.Response, error) {
	if _, err := c.nc.Write(c.req); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	c.buf.Reset()
	_, err = c.buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the answer's body: %w", err)
	}
	return resp, nil
}

// each runs f(0) to f(n-1) at once and returns their errors joined.
func each(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// driven is what drive measured.
type driven struct {
	took      time.Duration
	requests  int
	latencies []time.Duration // of each operation, sorted
}

// drive runs operations 0 to n-1 over the connections, each connection one operation at a
// time, and times them. With every > 0, operation i is sent no earlier than start + i×every and
// its latency counts from then, so that a stall delays the operations behind it too (no
// coordinated omission); otherwise each connection sends its next operation as soon as the last
// one is answered. op returns how many requests the operation made.
func drive(ctx context.Context, cs []*conn, n int, every time.Duration, op func(ctx context.Context, c *conn, i int) (int, error)) (driven, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next, requests atomic.Int64
	lat := make([][]time.Duration, len(cs))
	start := time.Now()
	err := each(len(cs), func(k int) error {
		for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
			sent := time.Now()
			if every > 0 {
				sent = start.Add(time.Duration(i) * every)
				if err := sleepUntil(ctx, sent); err != nil {
					return err
				}
			}
			reqs, err := op(ctx, cs[k], i)
			if err != nil {
				cancel()
				return fmt.Errorf("operation %d: %w", i, err)
			}
			lat[k] = append(lat[k], time.Since(sent))
			requests.Add(int64(reqs))
		}
		return nil
	})
	d := driven{took: time.Since(start), requests: int(requests.Load())}
	for _, l := range lat {
		d.latencies = append(d.latencies, l...)
	}
	slices.Sort(d.latencies)
	return d, firstCause(err)
}

// firstCause drops the context.Canceled errors of the callers that drive stopped after
// another one failed, keeping that failure.
func firstCause(err error) error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	var rest []error
	for _, e := range j.Unwrap() {
		if !errors.Is(e, context.Canceled) {
			rest = append(rest, e)
		}
	}
	if len(rest) == 0 {
		return err
	}
	return errors.Join(rest...)
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// jobJSON returns the enqueue request of job i: its body a JSON string whose text, as the
// server stores it, is BodySize bytes, due after delay.
func jobJSON(i int, delay time.Duration) []byte {
	b := make([]byte, 0, BodySize+48)
	b = append(b, `{"body":"`...)
	b = append(b, Body(i)[:BodySize-2]...)
	b = append(b, `"`...)
	if delay > 0 {
		b = append(b, `,"delay_ms":`...)
		b = strconv.AppendInt(b, delay.Milliseconds(), 10)
	}
	return append(b, '}')
}

// batchJSON returns the batch enqueue request of jobs from to to-1, job i due after delay(i).
func batchJSON(from, to int, delay func(i int) time.Duration) []byte {
	b := []byte(`{"jobs":[`)
	for i := from; i < to; i++ {
		if i > from {
			b = append(b, ',')
		}
		b = append(b, jobJSON(i, delay(i))...)
	}
	return append(b, "]}"...)
}

// httpTopic is the path of a topic's collection of jobs, and the prefix of its other paths.
func httpTopic(topic string) string { return "/v1/topics/" + url.PathEscape(topic) }

// enqueueOne sends job i alone.
func enqueueOne(ctx context.Context, c *conn, topic string, body []byte) error {
	_, err := c.do(ctx, http.MethodPost, httpTopic(topic)+"/jobs", body, http.StatusCreated)
	return err
}

// errorItem is how an item that failed appears in a batch answer; a job never has that key.
var errorItem = []byte(`"error":`)

// enqueueBatch sends one batch request and checks that every job of it was stored.
func enqueueBatch(ctx context.Context, c *conn, topic string, body []byte) error {
	ans, err := c.do(ctx, http.MethodPost, httpTopic(topic)+"/jobs/batch", body, http.StatusOK)
	if err != nil {
		return err
	}
	if i := bytes.Index(ans, errorItem); i >= 0 {
		return fmt.Errorf("a job of the batch failed: %s", ans[i:min(len(ans), i+200)])
	}
	return nil
}

// reserveOne is the request of a consumer that takes one job at a time, waiting up to a second
// for one to be due.
var reserveOne = []byte(`{"max":1,"wait_ms":1000}`)

// reserveAndAck reserves one job and acks it, as a consumer that does nothing with its job
// would, and returns the requests it made.
func reserveAndAck(ctx context.Context, c *conn, topic string) (int, error) {
	for reqs := 1; ; reqs++ {
		ans, err := c.do(ctx, http.MethodPost, httpTopic(topic)+"/reserve", reserveOne, http.StatusOK)
		if err != nil {
			return reqs, err
		}
		var res struct {
			Jobs []struct {
				ID    string `json:"id"`
				Lease string `json:"lease"`
			} `json:"jobs"`
		}
		if err := json.Unmarshal(ans, &res); err != nil {
			return reqs, fmt.Errorf("reserve: %w", err)
		}
		if len(res.Jobs) == 0 {
			if err := ctx.Err(); err != nil {
				return reqs, err
			}
			continue // the wait ended with no job due: ask again
		}
		j := res.Jobs[0]
		ack, err := json.Marshal(struct {
			Lease string `json:"lease"`
		}{j.Lease})
		if err != nil {
			return reqs, err
		}
		_, err = c.do(ctx, http.MethodPost, httpTopic(topic)+"/jobs/"+url.PathEscape(j.ID)+"/ack", ack, http.StatusNoContent)
		return reqs + 1, err
	}
}
