package beanstalkd

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawPeer is a connection driven from any goroutine: it reports errors instead of failing
// the test, which only the test's goroutine may do.
type rawPeer struct{ p *peer }

// dialRaw opens a connection to addr on the test's goroutine, closed when the test ends.
func dialRaw(t *testing.T, addr string) rawPeer { return rawPeer{dialPeer(t, addr)} }

// do sends one command (and a body when given) and returns its reply, or an error.
func (r rawPeer) do(cmd string, body ...string) (string, error) {
	_ = r.p.nc.SetWriteDeadline(time.Now().Add(conversationTimeout))
	if _, err := r.p.nc.Write([]byte(strings.Join(append([]string{cmd}, body...), "\r\n") + "\r\n")); err != nil {
		return "", err
	}
	return r.p.tryRead(conversationTimeout)
}

// close closes the connection at once.
func (r rawPeer) close() { r.p.nc.Close() }

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
