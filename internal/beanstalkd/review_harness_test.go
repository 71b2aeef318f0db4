package beanstalkd

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// peer is one beanstalkd connection driven command by command.
type peer struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

// dial opens a connection to addr, closed when the test ends.
func dialPeer(t *testing.T, addr string) *peer {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, conversationTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &peer{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// send writes lines, each ended with CRLF, without reading a reply.
func (c *peer) send(lines ...string) {
	c.t.Helper()
	_ = c.nc.SetWriteDeadline(time.Now().Add(conversationTimeout))
	if _, err := c.nc.Write([]byte(strings.Join(lines, "\r\n") + "\r\n")); err != nil {
		c.t.Fatalf("write %q: %v", lines, err)
	}
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
		if _, err := ioReadFull(c.br, body); err != nil {
			return l, err
		}
		l += string(body)
	}
	return l, nil
}

func ioReadFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := r.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// do sends one command line (and a body when given) and returns its reply.
func (c *peer) do(cmd string, body ...string) string {
	c.t.Helper()
	c.send(append([]string{cmd}, body...)...)
	return c.read(conversationTimeout)
}

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
