package beanstalkd

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/backend"
	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/proto"
	"github.com/delayq/delayq/cmd/delayq/internal/beanstalktest"
	"github.com/delayq/delayq/delayqtest"
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
	ln := listen(t)
	stop := serve(t, srv, ln)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// listen returns a listener on a free loopback port.
func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// serve runs srv.Serve on ln until stop is called or the test ends; stop returns what Serve
// returned.
func serve(t testing.TB, srv *Server, ln net.Listener) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
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

// peer is one connection to a server, driven command by command. Its methods fail the test
// on an error, except try, tryRead and close, which other goroutines than the test's may call.
type peer struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

// dial opens a connection to addr, closed when the test ends.
func dial(t *testing.T, addr string) *peer {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, conversationTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &peer{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// write sends s as it is, without reading a reply.
func (c *peer) write(s string) {
	c.t.Helper()
	if err := c.tryWrite(s); err != nil {
		c.t.Fatalf("write %q: %v", s, err)
	}
}

func (c *peer) tryWrite(s string) error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(conversationTimeout))
	_, err := io.WriteString(c.nc, s)
	return err
}

// send writes lines, each ended with CRLF, without reading a reply.
func (c *peer) send(lines ...string) {
	c.t.Helper()
	c.write(strings.Join(lines, "\r\n") + "\r\n")
}

// read returns the next reply, its body included, waiting up to wait for it.
func (c *peer) read(wait time.Duration) string {
	c.t.Helper()
	s, err := c.tryRead(wait)
	if err != nil {
		c.t.Fatalf("reading a reply: %v (got %q)", err, s)
	}
	return s
}

func (c *peer) tryRead(wait time.Duration) (string, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(wait))
	defer c.nc.SetReadDeadline(time.Time{})
	l, err := c.br.ReadString('\n')
	if err != nil {
		return l, err
	}
	f := strings.Fields(l)
	if len(f) > 1 && (f[0] == "RESERVED" || f[0] == "FOUND" || f[0] == "OK") {
		n, err := strconv.Atoi(f[len(f)-1])
		if err != nil {
			return l, err
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(c.br, body); err != nil {
			return l, err
		}
		l += string(body)
	}
	return l, nil
}

// do sends one command line (and a body when given) and returns its reply.
func (c *peer) do(cmd string, body ...string) string {
	c.t.Helper()
	c.send(append([]string{cmd}, body...)...)
	return c.read(conversationTimeout)
}

// try is do that returns an error instead of failing the test.
func (c *peer) try(cmd string, body ...string) (string, error) {
	if err := c.tryWrite(strings.Join(append([]string{cmd}, body...), "\r\n") + "\r\n"); err != nil {
		return "", err
	}
	return c.tryRead(conversationTimeout)
}

// expect reads one reply line and fails unless it is want.
func (c *peer) expect(want string) {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(conversationTimeout))
	got, err := c.br.ReadString('\n')
	if err != nil || got != want {
		c.t.Fatalf("got %q, %v; want %q", got, err, want)
	}
}

// expectClosed fails unless the server closes the connection.
func (c *peer) expectClosed() {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(conversationTimeout))
	if b, err := c.br.ReadByte(); err == nil {
		c.t.Fatalf("read %q, want the connection closed", b)
	}
}

// close closes the connection at once.
func (c *peer) close() { c.nc.Close() }

// transcript collects the replies of a scenario.
type transcript struct{ strings.Builder }

func (tr *transcript) add(label, reply string) {
	fmt.Fprintf(&tr.Builder, "%s -> %s", label, reply)
	if !strings.HasSuffix(reply, "\n") {
		tr.WriteString("\n")
	}
}

// differ runs scenario on a fresh beanstalkd and a fresh server on the delayq Backend and
// fails the test where their transcripts differ (clock fields normalised).
func differ(t *testing.T, scenario func(t *testing.T, addr string) string) {
	t.Helper()
	s := startServers(t, newDelayqBackend(t))
	want := normaliseClocks(scenario(t, s.real))
	got := normaliseClocks(scenario(t, s.ours))
	if got != want {
		t.Errorf("beanstalkd:\n%s\ndelayq:\n%s", want, got)
	}
}

// pollReply sends cmd until its reply contains want or wait passes, and returns the last reply.
func (c *peer) pollReply(cmd, want string, wait time.Duration) string {
	c.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		r := c.do(cmd)
		if strings.Contains(r, want) || time.Now().After(deadline) {
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// replyID returns the id of an INSERTED, RESERVED, BURIED or FOUND reply, and whether it is one.
func replyID(reply string) (uint64, bool) {
	f := strings.Fields(reply)
	if len(f) < 2 {
		return 0, false
	}
	switch f[0] {
	case "INSERTED", "RESERVED", "BURIED", "FOUND":
	default:
		return 0, false
	}
	n, err := strconv.ParseUint(f[1], 10, 64)
	return n, err == nil
}

// statField returns a numeric field of a stats reply, or -1 when it is missing.
func statField(reply, name string) int64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `: ([0-9]+)\r?$`).FindStringSubmatch(reply)
	if m == nil {
		return -1
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// clockFields matches the stats fields that tell how long something has been or has left, in
// whole seconds: they depend on when the command ran.
var clockFields = regexp.MustCompile(`(?m)^(age|time-left|pause-time-left): [0-9]+$`)

// normaliseClocks replaces the clock fields' values and fixes the YAML document's length in the
// OK line above it.
func normaliseClocks(s string) string {
	return regexp.MustCompile(`OK [0-9]+\r\n`).ReplaceAllString(clockFields.ReplaceAllString(s, "$1: <s>"), "OK <n>\r\n")
}

// eachBackend runs test on the in-memory Backend and on delayq's, each in a subtest.
func eachBackend(t *testing.T, test func(t *testing.T, newBackend func() proto.Backend)) {
	t.Run("memory", func(t *testing.T) {
		test(t, func() proto.Backend { return newMemBackend() })
	})
	t.Run("delayq", func(t *testing.T) {
		test(t, func() proto.Backend { return newDelayqBackend(t) })
	})
}

// newDelayqBackend returns the delayq Backend on a Client of a redis-server of its own.
func newDelayqBackend(t testing.TB) *backend.Backend {
	t.Helper()
	return newDelayqBackendWith(t, delayq.Config{})
}

// newDelayqBackendWith is newDelayqBackend with a Client made with cfg.
func newDelayqBackendWith(t testing.TB, cfg delayq.Config) *backend.Backend {
	t.Helper()
	return backend.New(delayqtest.NewClient(t, cfg), slog.New(slog.DiscardHandler))
}

// statsFields keeps the named fields of a stats reply.
func statsFields(reply string, names ...string) string {
	var out []string
	for _, l := range strings.Split(reply, "\n") {
		for _, n := range names {
			if strings.HasPrefix(l, n+": ") {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n") + "\n"
}

// sortedList sorts the items of a YAML list reply, for servers that list in different orders.
func sortedList(reply string) string {
	lines := strings.Split(reply, "\n")
	var items, rest []string
	for _, l := range lines {
		if strings.HasPrefix(l, "- ") {
			items = append(items, l)
		} else {
			rest = append(rest, l)
		}
	}
	slices.Sort(items)
	return strings.Join(rest, "\n") + strings.Join(items, "\n") + "\n"
}

// differWith is differ on a delayq Backend whose Client is made with cfg.
func differWith(t *testing.T, cfg delayq.Config, scenario func(t *testing.T, addr string) string) {
	t.Helper()
	s := startServers(t, newDelayqBackendWith(t, cfg))
	want := normaliseClocks(scenario(t, s.real))
	got := normaliseClocks(scenario(t, s.ours))
	if got != want {
		t.Errorf("beanstalkd:\n%s\ndelayq:\n%s", want, got)
	}
}

// eachPartitioning runs test on topics of one partition and of eight.
func eachPartitioning(t *testing.T, test func(t *testing.T, cfg delayq.Config)) {
	for _, n := range []int{1, 8} {
		t.Run(fmt.Sprintf("partitions=%d", n), func(t *testing.T) { test(t, delayq.Config{Partitions: n}) })
	}
}

// script runs cmds on one connection (a command followed by a line starting "body:" sends
// that body) and returns the transcript.
func script(t *testing.T, addr string, cmds ...string) string {
	c := dial(t, addr)
	var tr transcript
	for i := 0; i < len(cmds); i++ {
		cmd := cmds[i]
		if i+1 < len(cmds) && len(cmds[i+1]) > 5 && cmds[i+1][:5] == "body:" {
			tr.add(cmd, c.do(cmd, cmds[i+1][5:]))
			i++
			continue
		}
		tr.add(cmd, c.do(cmd))
	}
	return tr.String()
}

// sharedBackends returns a constructor of started Backends, each on its own Client of one
// redis-server: servers that share tubes.
func sharedBackends(t *testing.T) func() *backend.Backend {
	rdb := delayqtest.NewRedis(t)
	return func() *backend.Backend {
		c, err := delayq.New(context.Background(), rdb, delayq.Config{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		b := backend.New(c, slog.New(slog.DiscardHandler))
		t.Cleanup(b.Close)
		if err := b.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// putJobs puts n jobs in tube, job i with priority pri(i), and returns each id's priority.
func putJobs(t *testing.T, addr, tube string, n int, pri func(i int) int) map[uint64]int {
	t.Helper()
	c := dial(t, addr)
	c.do("use " + tube)
	out := map[uint64]int{}
	for i := range n {
		id, ok := replyID(c.do(fmt.Sprintf("put %d 0 120 1", pri(i)), "x"))
		if !ok {
			t.Fatalf("put %d failed", i)
		}
		out[id] = pri(i)
	}
	return out
}

// drainConcurrently has conns connections, watching tubes, reserve-with-timeout 0 and delete
// until TIMED_OUT, and returns the ids each reserved, in order.
func drainConcurrently(t *testing.T, addr string, conns int, tubes []string) [][]uint64 {
	t.Helper()
	peers := make([]*peer, conns)
	for i := range peers {
		peers[i] = dial(t, addr)
	}
	got := make([][]uint64, conns)
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Go(func() {
			for _, tube := range tubes {
				if _, err := p.try("watch " + tube); err != nil {
					errs <- err
					return
				}
			}
			for {
				r, err := p.try("reserve-with-timeout 0")
				if err != nil {
					errs <- err
					return
				}
				if r == "TIMED_OUT\r\n" {
					return
				}
				id, ok := replyID(r)
				if !ok {
					errs <- fmt.Errorf("connection %d: reserve: %q", i, r)
					return
				}
				got[i] = append(got[i], id)
				if r, err := p.try(fmt.Sprintf("delete %d", id)); err != nil || r != "DELETED\r\n" {
					errs <- fmt.Errorf("connection %d: delete %d: %q, %v", i, id, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return got
}

// checkDrained wants every job of pris reserved exactly once, and each connection's jobs in
// priority, then id order (every job was put before the first reserve, so a job taken later
// was passed over before).
func checkDrained(t *testing.T, pris map[uint64]int, got [][]uint64) {
	t.Helper()
	seen := map[uint64]int{}
	for i, ids := range got {
		for k, id := range ids {
			if j, dup := seen[id]; dup {
				t.Errorf("job %d reserved by connections %d and %d", id, j, i)
			}
			seen[id] = i
			if _, ok := pris[id]; !ok {
				t.Errorf("connection %d reserved job %d, never put", i, id)
			}
			if k > 0 {
				a, b := ids[k-1], id
				if pris[a] > pris[b] || pris[a] == pris[b] && a > b {
					t.Errorf("connection %d reserved job %d (pri %d) after job %d (pri %d)", i, b, pris[b], a, pris[a])
				}
			}
		}
	}
	for id := range pris {
		if _, ok := seen[id]; !ok {
			t.Errorf("job %d was never reserved", id)
		}
	}
}

// memBackend is a small in-memory Backend for the server's tests: enough storage (ready and
// reserved jobs, ids from a counter) for put, reserve, delete, peek and release to behave as
// in beanstalkd. Delays, burying and kicking are the delayq Backend's to get right.
type memBackend struct {
	mu      sync.Mutex
	nextID  uint64
	jobs    map[uint64]*memJob
	changed chan struct{} // closed and replaced whenever a job becomes ready
}

type memJob struct {
	id    uint64
	tube  string
	pri   uint32
	ttr   time.Duration
	body  []byte
	owner proto.Session // 0 while ready
}

func newMemBackend() *memBackend {
	return &memBackend{jobs: map[uint64]*memJob{}, changed: make(chan struct{})}
}

func (m *memBackend) notify() {
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *memBackend) Put(_ context.Context, tube string, pri uint32, _, ttr time.Duration, body []byte) (uint64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextID++
	m.jobs[m.nextID] = &memJob{id: m.nextID, tube: tube, pri: pri, ttr: ttr, body: slices.Clone(body)}
	m.notify()
	return m.nextID, false, nil
}

// next returns the most urgent ready job of tubes: lowest priority, then lowest id.
func (m *memBackend) next(tubes []string) *memJob {
	var best *memJob
	for _, j := range m.jobs {
		if j.owner != 0 || !slices.Contains(tubes, j.tube) {
			continue
		}
		if best == nil || cmp.Or(cmp.Compare(j.pri, best.pri), cmp.Compare(j.id, best.id)) < 0 {
			best = j
		}
	}
	return best
}

func (m *memBackend) Reserve(ctx context.Context, s proto.Session, tubes []string, timeout time.Duration) (proto.Job, error) {
	var expired <-chan time.Time
	if timeout >= 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	for {
		m.mu.Lock()
		j, changed := m.next(tubes), m.changed
		if j != nil {
			j.owner = s
		}
		m.mu.Unlock()
		if j != nil {
			return proto.Job{ID: j.id, Body: j.body, TTR: j.ttr}, nil
		}
		if timeout == 0 {
			return proto.Job{}, proto.ErrTimedOut
		}
		select {
		case <-changed:
		case <-expired:
			return proto.Job{}, proto.ErrTimedOut
		case <-ctx.Done():
			return proto.Job{}, ctx.Err()
		}
	}
}

func (m *memBackend) ReserveJob(context.Context, proto.Session, uint64) (proto.Job, error) {
	return proto.Job{}, proto.ErrNotFound
}

// mine returns a job that s may act on: one it reserved, or with anyReady one nobody holds.
func (m *memBackend) mine(s proto.Session, id uint64, anyReady bool) *memJob {
	j := m.jobs[id]
	if j == nil || (j.owner != s && !(anyReady && j.owner == 0)) {
		return nil
	}
	return j
}

func (m *memBackend) Delete(_ context.Context, s proto.Session, id uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mine(s, id, true) == nil {
		return proto.ErrNotFound
	}
	delete(m.jobs, id)
	return nil
}

func (m *memBackend) Release(_ context.Context, s proto.Session, id uint64, pri uint32, _ time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j := m.mine(s, id, false)
	if j == nil {
		return false, proto.ErrNotFound
	}
	j.owner, j.pri = 0, pri
	m.notify()
	return false, nil
}

func (m *memBackend) Bury(context.Context, proto.Session, uint64, uint32) error {
	return proto.ErrNotFound
}

func (m *memBackend) Touch(_ context.Context, s proto.Session, id uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return okIf(m.mine(s, id, false) != nil)
}

func (m *memBackend) Kick(context.Context, string, uint64) (uint64, error) { return 0, nil }

func (m *memBackend) KickJob(context.Context, uint64) error { return proto.ErrNotFound }

func (m *memBackend) Peek(_ context.Context, id uint64) (proto.Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j := m.jobs[id]
	if j == nil {
		return proto.Job{}, proto.ErrNotFound
	}
	return proto.Job{ID: j.id, Body: j.body, TTR: j.ttr}, nil
}

func (m *memBackend) PeekState(_ context.Context, tube, state string) (proto.Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if j := m.next([]string{tube}); j != nil && state == "ready" {
		return proto.Job{ID: j.id, Body: j.body, TTR: j.ttr}, nil
	}
	return proto.Job{}, proto.ErrNotFound
}

func (m *memBackend) StatsJob(context.Context, uint64) (proto.JobStats, error) {
	return proto.JobStats{}, proto.ErrNotFound
}

func (m *memBackend) StatsTube(context.Context, string) (proto.TubeStats, error) {
	return proto.TubeStats{}, proto.ErrNotFound
}

func (m *memBackend) Stats(context.Context) (proto.StoreStats, error) { return proto.StoreStats{}, nil }

func (m *memBackend) ListTubes(context.Context) ([]string, error) { return nil, nil }

func (m *memBackend) PauseTube(context.Context, string, time.Duration) error { return nil }

func (m *memBackend) Disconnect(_ context.Context, s proto.Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, j := range m.jobs {
		if j.owner == s {
			j.owner = 0
			m.notify()
		}
	}
	return nil
}

func okIf(ok bool) error {
	if !ok {
		return proto.ErrNotFound
	}
	return nil
}
