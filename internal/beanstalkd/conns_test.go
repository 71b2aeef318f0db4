package beanstalkd

import (
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/delayq/delayq/internal/testwait"
)

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
	c.send("use busy\r\nwatch busy\r\nput 0 0 10 2\r\nok\r\nreserve-with-timeout 5\r\ndelete 1\r\n")
	for _, want := range []string{"USING busy\r\n", "WATCHING 2\r\n", "INSERTED 1\r\n", "RESERVED 1 2\r\n", "ok\r\n", "DELETED\r\n"} {
		c.expect(want)
	}
}
