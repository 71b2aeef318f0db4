package redistest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/testwait"
)

// proxyClient returns a go-redis client of p configured by opts; it is
// closed when the test ends.
func proxyClient(t testing.TB, p *Proxy, opts redis.Options) *redis.Client {
	t.Helper()
	opts.Addr = p.Addr()
	c := redis.NewClient(&opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// serverGet reads key straight from the server, bypassing the proxy; a
// missing key reads as "".
func serverGet(t *testing.T, s *Server, key string) string {
	t.Helper()
	v, err := do(s.Addr, time.Second, "GET", key)
	if err != nil {
		t.Fatalf("GET %s from the server: %v", key, err)
	}
	str, _ := v.(string)
	return str
}

// isIncr matches the command INCR key.
func isIncr(key string) func(args []string) bool {
	return func(args []string) bool {
		return len(args) == 2 && strings.EqualFold(args[0], "INCR") && args[1] == key
	}
}

// waitFired waits until a fault armed by DropReplyOnce has fired.
func waitFired(t *testing.T, fired <-chan struct{}) {
	t.Helper()
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("DropReplyOnce did not fire")
	}
}

func TestCopyValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, value string
	}{
		{"simple string", "+OK\r\n"},
		{"error", "-ERR unknown command\r\n"},
		{"integer", ":-12\r\n"},
		{"bulk string holding CRLF", "$6\r\nab\r\ncd\r\n"},
		{"empty bulk string", "$0\r\n\r\n"},
		{"null bulk string", "$-1\r\n"},
		{"null array", "*-1\r\n"},
		{"empty array", "*0\r\n"},
		{"nested array", "*3\r\n:1\r\n*2\r\n$1\r\na\r\n_\r\n+x\r\n"},
		{"null", "_\r\n"},
		{"double", ",3.14\r\n"},
		{"infinite double", ",-inf\r\n"},
		{"boolean", "#t\r\n"},
		{"big number", "(3492890328409238509324850943850943825024385\r\n"},
		{"bulk error", "!21\r\nSYNTAX invalid syntax\r\n"},
		{"verbatim string", "=15\r\ntxt:Some string\r\n"},
		{"map", "%2\r\n+first\r\n:1\r\n$6\r\nsecond\r\n~2\r\n:2\r\n:3\r\n"},
		{"set", "~3\r\n+a\r\n#f\r\n,1.5\r\n"},
		{"attribute before its value", "|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*2\r\n:2\r\n:3\r\n"},
		{"push", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bufio.NewReader(strings.NewReader(tt.value + "+NEXT\r\n"))
			var got bytes.Buffer
			if err := copyValue(&got, r); err != nil {
				t.Fatalf("copyValue: %v", err)
			}
			if diff := cmp.Diff(tt.value, got.String()); diff != "" {
				t.Errorf("copied (-want +got):\n%s", diff)
			}
			if rest, _ := io.ReadAll(r); string(rest) != "+NEXT\r\n" {
				t.Errorf("left %q unread, want the next value", rest)
			}
		})
	}
}

func TestCopyValueErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"",
		"?3\r\n",             // unknown type
		"+OK\n",              // no CR
		"$abc\r\n",           // bad length
		"*-2\r\n",            // bad length
		"$5\r\nab",           // truncated bulk string
		"*2\r\n:1\r\n",       // truncated array
		"|1\r\n+a\r\n+b\r\n", // attribute without its value
		"+" + strings.Repeat("x", proxyBufSize) + "\r\n", // longer than the buffer
	} {
		if err := copyValue(io.Discard, bufio.NewReader(strings.NewReader(in))); err == nil {
			t.Errorf("copyValue(%.20q) = nil, want an error", in)
		}
	}
}

func FuzzCopyValue(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "$3\r\nabc\r\n", "*2\r\n%1\r\n:1\r\n:2\r\n_\r\n", "|1\r\n+a\r\n+b\r\n#t\r\n", ">1\r\n(12\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		src := bytes.NewReader(in)
		r := bufio.NewReader(src)
		var out bytes.Buffer
		if err := copyValue(&out, r); err != nil {
			return
		}
		consumed := len(in) - r.Buffered() - src.Len()
		if !bytes.Equal(out.Bytes(), in[:consumed]) {
			t.Fatalf("copied %q, but consumed %q", out.Bytes(), in[:consumed])
		}
		// What was copied is exactly one value.
		again := bufio.NewReader(bytes.NewReader(out.Bytes()))
		if err := copyValue(io.Discard, again); err != nil || again.Buffered() != 0 {
			t.Fatalf("copy %q is not one value: %v, %d bytes left", out.Bytes(), err, again.Buffered())
		}
	})
}

func FuzzReadCommand(f *testing.F) {
	for _, s := range []string{"*2\r\n$4\r\nINCR\r\n$1\r\nk\r\n", "PING\r\n", "*-1\r\n", "*1\r\n$0\r\n\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		args, raw, err := readCommand(bufio.NewReader(bytes.NewReader(in)))
		if err != nil || len(args) == 0 || in[0] != '*' {
			return
		}
		again, _, err := readCommand(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			t.Fatalf("forwarded bytes %q do not parse: %v", raw, err)
		}
		if diff := cmp.Diff(args, again); diff != "" {
			t.Fatalf("forwarded command differs (-read +forwarded):\n%s", diff)
		}
	})
}

func TestProxyPassThrough(t *testing.T) {
	t.Parallel()
	for _, protocol := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", protocol), func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t, 30*time.Second)
			p := NewProxy(t, Standalone(t).Addr)
			c := proxyClient(t, p, redis.Options{Protocol: protocol, PoolSize: 8})

			big := strings.Repeat("0123456789", 200_000) // larger than every buffer
			if err := c.Set(ctx, "big", big, 0).Err(); err != nil {
				t.Fatalf("SET big: %v", err)
			}
			if got, err := c.Get(ctx, "big").Result(); err != nil || got != big {
				t.Fatalf("GET big = %d bytes, %v; want %d bytes", len(got), err, len(big))
			}
			if err := c.HSet(ctx, "h", "f1", "v1", "f2", "v2").Err(); err != nil {
				t.Fatalf("HSET: %v", err)
			}
			h, err := c.HGetAll(ctx, "h").Result()
			if diff := cmp.Diff(map[string]string{"f1": "v1", "f2": "v2"}, h); err != nil || diff != "" {
				t.Fatalf("HGETALL: %v (-want +got):\n%s", err, diff)
			}
			if err := c.ZAdd(ctx, "z", redis.Z{Score: 1.5, Member: "m"}).Err(); err != nil {
				t.Fatalf("ZADD: %v", err)
			}
			if got, err := c.ZScore(ctx, "z", "m").Result(); err != nil || got != 1.5 {
				t.Fatalf("ZSCORE = %v, %v; want 1.5", got, err)
			}
			if err := c.Get(ctx, "missing").Err(); !errors.Is(err, redis.Nil) {
				t.Fatalf("GET missing: %v, want redis.Nil", err)
			}

			// More commands in one pipeline than the proxy keeps in flight.
			const n = 3 * maxInFlight
			cmds, err := c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
				for range n {
					pipe.Incr(ctx, "pipelined")
				}
				return nil
			})
			if err != nil {
				t.Fatalf("pipeline: %v", err)
			}
			for i, cmd := range cmds {
				if got := cmd.(*redis.IntCmd).Val(); got != int64(i+1) {
					t.Fatalf("reply %d of the pipeline = %d, want %d", i, got, i+1)
				}
			}

			// Many connections of the pool at once.
			const workers, each = 16, 50
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for range each {
						if err := c.Incr(ctx, "concurrent").Err(); err != nil {
							t.Errorf("INCR: %v", err)
							return
						}
					}
				})
			}
			wg.Wait()
			if got, want := p.Forwarded("incr"), n+workers*each; got != want {
				t.Errorf("Forwarded(incr) = %d, want %d", got, want)
			}
			if p.Conns() < 2 {
				t.Errorf("Conns() = %d, want several", p.Conns())
			}
		})
	}
}

// TestProxyRESP3Types checks that the proxy forwards every RESP3 reply type
// byte for byte, by comparing a conversation through it with the same one
// held with the server directly.
func TestProxyRESP3Types(t *testing.T) {
	t.Parallel()
	s := Standalone(t, WithArgs("--enable-debug-command", "yes"))
	p := NewProxy(t, s.Addr)
	cmds := [][]string{{"HELLO", "3"}}
	for _, typ := range []string{"string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib", "push", "verbatim", "true", "false"} {
		cmds = append(cmds, []string{"DEBUG", "PROTOCOL", typ})
	}
	cmds = append(cmds, []string{"NOSUCHCOMMAND"}, []string{"QUIT"})
	var req []byte
	for _, c := range cmds {
		req = append(req, encodeCommand(c)...)
	}
	// The connection id differs between the two conversations.
	id := regexp.MustCompile(`\$2\r\nid\r\n:\d+\r\n`)
	converse := func(addr string) string {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(req); err != nil {
			t.Fatal(err)
		}
		// QUIT makes the server, and so the proxy, close the connection.
		resp, err := io.ReadAll(conn)
		if err != nil {
			t.Fatalf("read replies from %s: %v", addr, err)
		}
		return id.ReplaceAllString(string(resp), "")
	}
	want := converse(s.Addr)
	unknown := strings.Index(want, "-ERR unknown command")
	if unknown < 0 {
		t.Fatalf("no reply to NOSUCHCOMMAND in %q", want)
	}
	for _, typ := range []string{"\r\n(", "\r\n|", "\r\n>", "\r\n=", "\r\n#t", "\r\n%", "\r\n~", "\r\n,", "\r\n_"} {
		if !strings.Contains(want, typ) {
			t.Fatalf("the server sent no %q; the test no longer covers it:\n%q", typ, want)
		}
	}
	if diff := cmp.Diff(want, converse(p.Addr())); diff != "" {
		t.Errorf("replies through the proxy differ (-direct +proxied):\n%s", diff)
	}
	if got, want := p.Forwarded("debug"), len(cmds)-3; got != want {
		t.Errorf("Forwarded(debug) = %d, want %d", got, want)
	}

	// Pushes and attributes answer no command of their own: dropping the
	// reply to the command after them cuts the conversation right there.
	fired := p.DropReplyOnce(func(args []string) bool { return args[0] == "NOSUCHCOMMAND" })
	if diff := cmp.Diff(want[:unknown], converse(p.Addr())); diff != "" {
		t.Errorf("replies with the last one dropped (-want +got):\n%s", diff)
	}
	waitFired(t, fired)
}

// TestProxyDropReplyRaw drops the 5th reply of a pipeline of ten INCRs sent
// in one write, seen on the wire: four replies, then end of file.
func TestProxyDropReplyRaw(t *testing.T) {
	t.Parallel()
	s := Standalone(t)
	p := NewProxy(t, s.Addr)
	fired := p.DropReplyOnce(isIncr("k5"))

	conn, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var req []byte
	for i := 1; i <= 10; i++ {
		req = append(req, encodeCommand([]string{"INCR", fmt.Sprintf("k%d", i)})...)
	}
	if _, err := conn.Write(req); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	for i := 1; i <= 4; i++ {
		if got, err := readReply(r); err != nil || got != int64(1) {
			t.Fatalf("reply %d = %v, %v; want 1", i, got, err)
		}
	}
	if got, err := readReply(r); !errors.Is(err, io.EOF) {
		t.Fatalf("reply 5 = %v, %v; want io.EOF", got, err)
	}
	waitFired(t, fired)

	// Redis ran the 5th command; the ones after it never reached Redis.
	for i, want := range []string{"1", "1", "1", "1", "1", "", "", "", "", ""} {
		if got := serverGet(t, s, fmt.Sprintf("k%d", i+1)); got != want {
			t.Errorf("k%d = %q on the server, want %q", i+1, got, want)
		}
	}
	if got := p.Forwarded("INCR"); got != 5 {
		t.Errorf("Forwarded(INCR) = %d, want 5", got)
	}
	if got := p.Dropped(); got != 1 {
		t.Errorf("Dropped() = %d, want 1", got)
	}
}

// TestProxyDropReplyGoRedis shows what the fault does to a go-redis caller:
// with retries on, go-redis runs the command a second time.
func TestProxyDropReplyGoRedis(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		maxRetries int
		wantErr    error
		wantReply  int64  // what INCR returned to the caller
		wantServer string // the counter's value on the server
	}{
		{"default retries run it twice", 0, nil, 2, "2"},
		{"no retries report EOF", -1, io.EOF, 0, "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t, 10*time.Second)
			s := Standalone(t)
			p := NewProxy(t, s.Addr)
			c := proxyClient(t, p, redis.Options{MaxRetries: tt.maxRetries})
			fired := p.DropReplyOnce(isIncr("counter"))

			n, err := c.Incr(ctx, "counter").Result()
			if n != tt.wantReply || !errors.Is(err, tt.wantErr) {
				t.Fatalf("INCR = %d, %v; want %d, %v", n, err, tt.wantReply, tt.wantErr)
			}
			waitFired(t, fired)
			if got := serverGet(t, s, "counter"); got != tt.wantServer {
				t.Errorf("counter = %q on the server, want %q", got, tt.wantServer)
			}
		})
	}
}

// TestProxyDropReplyGoRedisPipeline drops the 5th reply of a go-redis
// pipeline of ten INCRs. Without retries go-redis reports io.EOF on every
// command, even on the four whose replies it read (their values are kept);
// with retries on, it replays the whole pipeline.
func TestProxyDropReplyGoRedisPipeline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		maxRetries int
		wantErr    error    // every command's error
		wantReply  []int64  // what each INCR returned to the caller
		wantServer []string // each counter's value on the server
	}{
		{
			name:       "no retries",
			maxRetries: -1,
			wantErr:    io.EOF,
			wantReply:  []int64{1, 1, 1, 1, 0, 0, 0, 0, 0, 0},
			wantServer: []string{"1", "1", "1", "1", "1", "", "", "", "", ""},
		},
		{
			name:       "default retries replay the pipeline",
			maxRetries: 0,
			wantReply:  []int64{2, 2, 2, 2, 2, 1, 1, 1, 1, 1},
			wantServer: []string{"2", "2", "2", "2", "2", "1", "1", "1", "1", "1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t, 10*time.Second)
			s := Standalone(t)
			p := NewProxy(t, s.Addr)
			c := proxyClient(t, p, redis.Options{MaxRetries: tt.maxRetries})
			fired := p.DropReplyOnce(isIncr("k5"))

			cmds, _ := c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
				for i := 1; i <= 10; i++ {
					pipe.Incr(ctx, fmt.Sprintf("k%d", i))
				}
				return nil
			})
			waitFired(t, fired)
			var replies []int64
			for i, cmd := range cmds {
				if err := cmd.Err(); !errors.Is(err, tt.wantErr) {
					t.Errorf("command %d: error %v, want %v", i+1, err, tt.wantErr)
				}
				replies = append(replies, cmd.(*redis.IntCmd).Val())
			}
			if diff := cmp.Diff(tt.wantReply, replies); diff != "" {
				t.Errorf("replies (-want +got):\n%s", diff)
			}
			var server []string
			for i := 1; i <= 10; i++ {
				server = append(server, serverGet(t, s, fmt.Sprintf("k%d", i)))
			}
			if diff := cmp.Diff(tt.wantServer, server); diff != "" {
				t.Errorf("counters on the server (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProxyDropRepliesForAWhile drops every reply of INCR counter for a
// while: go-redis sends the command four times (its default MaxRetries is 3),
// Redis runs it each time, and the caller gets io.EOF; other commands pass,
// and once the window has passed INCR is answered again.
func TestProxyDropRepliesForAWhile(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 10*time.Second)
	s := Standalone(t)
	p := NewProxy(t, s.Addr)
	c := proxyClient(t, p, redis.Options{})
	end := p.DropReplies(isIncr("counter"), 2*time.Second)

	if n, err := c.Incr(ctx, "counter").Result(); !errors.Is(err, io.EOF) {
		t.Fatalf("INCR during the window = %d, %v; want io.EOF", n, err)
	}
	if got := serverGet(t, s, "counter"); got != "4" {
		t.Errorf("counter = %q on the server, want \"4\" (the call and go-redis's 3 retries all ran)", got)
	}
	if n, err := c.Incr(ctx, "other").Result(); n != 1 || err != nil {
		t.Errorf("INCR other during the window = %d, %v; want 1, nil", n, err)
	}
	if got := p.Dropped(); got != 4 {
		t.Errorf("Dropped() = %d during the window, want 4", got)
	}
	select {
	case <-end:
	case <-ctx.Done():
		t.Fatal("the window did not end")
	}
	if n, err := c.Incr(ctx, "counter").Result(); n != 5 || err != nil {
		t.Fatalf("INCR after the window = %d, %v; want 5, nil", n, err)
	}
	if got := p.Dropped(); got != 4 {
		t.Errorf("Dropped() = %d after the window, want still 4", got)
	}
}

func TestProxyOutage(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 10*time.Second)
	p := NewProxy(t, Standalone(t).Addr)
	c := proxyClient(t, p, redis.Options{MaxRetries: -1})
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING before the outage: %v", err)
	}
	conns := p.Conns()

	end := p.Outage(time.Second)
	// Both the pooled connection, now closed, and a new one fail at once.
	for i := range 2 {
		if err := c.Ping(ctx).Err(); err == nil || ctx.Err() != nil {
			t.Fatalf("PING %d during the outage: %v, want a connection error", i, err)
		}
	}
	if got := p.Conns(); got != conns {
		t.Errorf("Conns() = %d during the outage, want still %d", got, conns)
	}
	select {
	case <-end:
	case <-ctx.Done():
		t.Fatal("the outage did not end")
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after the outage: %v", err)
	}
}

func TestProxyCutAll(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, 10*time.Second)
	p := NewProxy(t, Standalone(t).Addr)
	c := proxyClient(t, p, redis.Options{})
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	p.CutAll()
	// go-redis notices the closed connection and dials a new one.
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after CutAll: %v", err)
	}
	if got := p.Conns(); got != 2 {
		t.Errorf("Conns() = %d, want 2", got)
	}
}

func TestProxyPubSub(t *testing.T) {
	t.Parallel()
	for _, protocol := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", protocol), func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t, 10*time.Second)
			p := NewProxy(t, Standalone(t).Addr)
			c := proxyClient(t, p, redis.Options{Protocol: protocol})
			sub := c.Subscribe(ctx, "ch")
			defer sub.Close()
			if _, err := sub.Receive(ctx); err != nil {
				t.Fatalf("SUBSCRIBE: %v", err)
			}
			if err := sub.Ping(ctx); err != nil {
				t.Fatalf("PING in pub/sub mode: %v", err)
			}
			if err := c.Publish(ctx, "ch", "hello").Err(); err != nil {
				t.Fatalf("PUBLISH: %v", err)
			}
			for {
				msg, err := sub.Receive(ctx)
				if err != nil {
					t.Fatalf("receive: %v", err)
				}
				if m, ok := msg.(*redis.Message); ok {
					if m.Channel != "ch" || m.Payload != "hello" {
						t.Fatalf("message %+v, want hello on ch", m)
					}
					return
				}
			}
		})
	}
}

// TestProxyNoGoroutineLeak is not parallel, so that no other test's proxy
// runs while it looks for the goroutines of its own.
func TestProxyNoGoroutineLeak(t *testing.T) {
	// The server outlives the proxy: its end must not be what ends the
	// proxy's connections.
	s := Standalone(t)
	t.Run("busy proxy", func(t *testing.T) {
		ctx := testContext(t, 10*time.Second)
		p := NewProxy(t, s.Addr)
		c := proxyClient(t, p, redis.Options{PoolSize: 4, MaxRetries: -1})
		// Left open: the proxy's cleanup must end its pass-through.
		sub := c.Subscribe(ctx, "ch")
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatalf("SUBSCRIBE: %v", err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { _ = c.Incr(ctx, "n").Err() })
		}
		wg.Wait()
		// Redis never answers this BLPOP, so at cleanup the proxy still
		// waits for the reply it is to drop.
		p.DropReplyOnce(func(args []string) bool { return strings.EqualFold(args[0], "BLPOP") })
		go func() { _ = c.BLPop(ctx, 0, "never").Err() }()
		testwait.For(t, 20*time.Second, "BLPOP to reach the proxy", func() bool { return p.Forwarded("blpop") > 0 })
		// An outage that outlives the test, on a proxy of its own.
		NewProxy(t, p.Addr()).Outage(time.Minute)
	})
	testwait.ForNil(t, 5*time.Second, "the proxy's goroutines to end after cleanup", func() error {
		buf := make([]byte, 1<<20)
		if stacks := string(buf[:runtime.Stack(buf, true)]); strings.Contains(stacks, "redistest.(*Proxy)") {
			return fmt.Errorf("left:\n%s", stacks)
		}
		return nil
	})
}
