package beanstalkd

import (
	"context"
	"net"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/delayq/delayq/internal/beanstalktest"
	"github.com/delayq/delayq/internal/testwait"
)

// statsKeys returns the keys of a stats document's lines, in order.
func statsKeys(reply string) []string {
	var keys []string
	for _, m := range regexp.MustCompile(`(?m)^([a-z-]+): `).FindAllStringSubmatch(reply, -1) {
		keys = append(keys, m[1])
	}
	return keys
}

// TestStatsHasEveryFieldOfBeanstalkd: the stats document has beanstalkd's fields in its order,
// and the connection figures count as beanstalkd's do.
func TestStatsHasEveryFieldOfBeanstalkd(t *testing.T) {
	s := startServers(t, newDelayqBackend(t))
	stream := "put 0 0 10 1\r\nx\r\nreserve-with-timeout 0\r\nstats\r\n"
	real, ours := converse(t, s.real, []byte(stream)), converse(t, s.ours, []byte(stream))
	if diff := cmp.Diff(statsKeys(real), statsKeys(ours)); diff != "" {
		t.Errorf("stats fields (-beanstalkd +ours):\n%s", diff)
	}
	for _, field := range []string{"current-jobs-reserved: 1", "cmd-put: 1", "total-jobs: 1",
		"current-connections: 1", "current-producers: 1", "current-workers: 1", "total-connections: 1",
		"current-tubes: 1", `version: "1.12"`, "draining: false"} {
		if !strings.Contains(ours, "\n"+field+"\n") {
			t.Errorf("stats lacks %q:\n%s", field, ours)
		}
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
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
