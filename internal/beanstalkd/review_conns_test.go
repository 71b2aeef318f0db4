package beanstalkd

import (
	"strings"
	"testing"
	"time"
)

// TestBuriedJobDeletedByAnotherConnection wants a buried job deletable by any connection, and
// a released-with-delay one too.
func TestBuriedJobDeletedByAnotherConnection(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a, b := dialPeer(t, addr), dialPeer(t, addr)
		tr.add("put", a.do("put 0 0 10 1", "1"))
		tr.add("put", a.do("put 0 0 10 1", "2"))
		tr.add("reserve", a.do("reserve-with-timeout 0"))
		tr.add("reserve", a.do("reserve-with-timeout 0"))
		tr.add("bury", a.do("bury 1 0"))
		tr.add("release", a.do("release 2 0 60"))
		tr.add("delete buried by b", b.do("delete 1"))
		tr.add("delete delayed by b", b.do("delete 2"))
		tr.add("stats-tube", b.do("stats-tube default"))
		return tr.String()
	})
}

// TestStalledClientsDoNotSlowOthers wants a client that stalls in the middle of a command
// line, or of a body, and one that sends a body far over the limit, to leave the others
// answered at once.
func TestStalledClientsDoNotSlowOthers(t *testing.T) {
	addr := startServer(t, Config{Backend: newDelayqBackend(t)})
	half := dialPeer(t, addr)
	_, _ = half.nc.Write([]byte("put 0 0 10 5"))
	body := dialPeer(t, addr)
	_, _ = body.nc.Write([]byte("put 0 0 10 60000\r\n" + strings.Repeat("x", 1000)))
	huge := dialPeer(t, addr)
	go func() {
		_ = huge.nc.SetWriteDeadline(time.Now().Add(conversationTimeout))
		_, _ = huge.nc.Write([]byte("put 0 0 10 3000000\r\n" + strings.Repeat("y", 3000000) + "\r\n"))
	}()
	c := dialPeer(t, addr)
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
}

// TestHangupWhileWaitingLosesNoJob wants a job put after a waiting client went away to be
// ready for the next.
func TestHangupWhileWaitingLosesNoJob(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a, b := dialPeer(t, addr), dialPeer(t, addr)
		tr.add("watch", a.do("watch x"))
		a.send("reserve")
		b.pollReply("stats-tube x", "current-waiting: 1", 3*time.Second)
		a.nc.Close()
		tr.add("gone (polled)", b.pollReply("stats-tube default", "current-watching: 1", 3*time.Second))
		tr.add("use", b.do("use x"))
		tr.add("put", b.do("put 0 0 10 1", "1"))
		tr.add("reserve", b.do("reserve-with-timeout 0"))
		tr.add("watch", b.do("watch x"))
		tr.add("reserve", b.do("reserve-with-timeout 0"))
		return tr.String()
	})
}
