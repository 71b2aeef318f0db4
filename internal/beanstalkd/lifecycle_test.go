package beanstalkd

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/delayqtest"
	"github.com/delayq/delayq/internal/beanstalkd/backend"
	"github.com/delayq/delayq/internal/testwait"
)

// clockFields matches the stats fields that tell how long something has been or has left, in
// whole seconds: they depend on when the command ran.
var clockFields = regexp.MustCompile(`(?m)^(age|time-left|pause-time-left): [0-9]+$`)

// normaliseClocks replaces the clock fields' values and fixes the YAML document's length in the
// OK line above it.
func normaliseClocks(s string) string {
	return regexp.MustCompile(`OK [0-9]+\r\n`).ReplaceAllString(clockFields.ReplaceAllString(s, "$1: <s>"), "OK <n>\r\n")
}

// TestJobLifecycleMatchesBeanstalkd sends one connection's life of jobs to a fresh beanstalkd
// and a fresh server on the delayq Backend, and wants the same replies: ids (both start at 1),
// the order of priorities and ids, release with a new priority, bury, kick (buried first, then
// delayed), kick-job, peek-ready, -delayed and -buried, reserve-job, touch, delete in every
// state, stats-job and stats-tube with their counters.
func TestJobLifecycleMatchesBeanstalkd(t *testing.T) {
	s := startServers(t, newDelayqBackend(t))
	stream := strings.Join([]string{
		"use life", "watch life", "ignore default",
		"put 5 0 10 1", "a", "put 1 0 10 1", "b", "put 5 0 10 1", "c", "put 2000 100 10 1", "d",
		"put 3000 0 10 1", "e",
		"peek-ready", "peek-delayed", "peek-buried", "stats-tube life",
		"reserve-with-timeout 0", // b: most urgent
		"release 2 9 0",
		"reserve-with-timeout 0", // a: priority 5, lower id than c
		"bury 1 7",
		"reserve-with-timeout 0", // c
		"stats-job 3", "touch 3", "delete 3", "delete 3",
		"peek-buried", "stats-job 1", "stats-job 2", "stats-tube life",
		"kick 10",       // the buried a
		"kick 10",       // then the delayed d
		"peek-delayed",  // none left
		"kick-job 2",    // ready: not kickable
		"reserve-job 5", // e, out of order
		"stats-job 5", "release 5 3000 100", "stats-job 5", "kick-job 5", "stats-job 5",
		"reserve-with-timeout 0", // a (7) before b (9), e (3000) and d (2000)
		"reserve-with-timeout 0", // b
		"reserve-with-timeout 0", // d
		"reserve-with-timeout 0", // e
		"reserve-with-timeout 0", // none
		"delete 1", "delete 2", "delete 4", "delete 5", "stats-tube life", "peek 5",
	}, "\r\n") + "\r\n"
	want := normaliseClocks(converse(t, s.real, []byte(stream)))
	got := normaliseClocks(converse(t, s.ours, []byte(stream)))
	if got != want {
		t.Errorf("beanstalkd:\n%s\nours:\n%s", want, got)
	}
}

// TestKickTakesTheFirstBuriedFirst: jobs buried in the same millisecond are kicked, and
// peeked, in the order they were buried, not in id order.
func TestKickTakesTheFirstBuriedFirst(t *testing.T) {
	s := startServers(t, newDelayqBackend(t))
	stream := strings.Join([]string{
		"put 0 0 10 1", "x", "put 0 0 10 1", "y", "put 0 0 10 1", "z",
		"reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0",
		"bury 3 0", "bury 1 0", "bury 2 0",
		"peek-buried", "kick 1", "peek-buried", "kick 1", "peek-buried",
	}, "\r\n") + "\r\n"
	want := converse(t, s.real, []byte(stream))
	if got := converse(t, s.ours, []byte(stream)); got != want {
		t.Errorf("beanstalkd:\n%s\nours:\n%s", want, got)
	}
}

// TestOrderOverPartitions: on a topic of several partitions (a Redis Cluster's default), jobs
// of equal priority still go out in id order, and a more urgent one first, as from one.
func TestOrderOverPartitions(t *testing.T) {
	s := startServers(t, newDelayqBackendWith(t, delayq.Config{Partitions: 8}))
	lines := []string{}
	for i := range 16 {
		pri := "5"
		if i == 11 {
			pri = "4"
		}
		lines = append(lines, "put "+pri+" 0 10 1", "x")
	}
	for range 17 {
		lines = append(lines, "reserve-with-timeout 0")
	}
	stream := strings.Join(lines, "\r\n") + "\r\n"
	want := converse(t, s.real, []byte(stream))
	if got := converse(t, s.ours, []byte(stream)); got != want {
		t.Errorf("beanstalkd:\n%s\nours:\n%s", want, got)
	}
}

// TestPauseOutlivesTheServerThatPaused: a pause-tube is kept in Redis, so another server (or
// the same one restarted) reports it and resumes the tube when it ends.
func TestPauseOutlivesTheServerThatPaused(t *testing.T) {
	rdb := delayqtest.NewRedis(t)
	newBackend := func() *backend.Backend {
		c, err := delayq.New(context.Background(), rdb, delayq.Config{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		b := backend.New(c, slog.New(slog.DiscardHandler))
		t.Cleanup(b.Close)
		return b
	}
	first := newBackend()
	a := startServer(t, Config{Backend: first})
	if got := converse(t, a, []byte("use p\r\nput 0 0 10 1\r\nx\r\npause-tube p 1\r\n")); got != "USING p\r\nINSERTED 1\r\nPAUSED\r\n" {
		t.Fatalf("pausing: %q", got)
	}
	first.Close() // stops before the pause ends
	second := newBackend()
	if err := second.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := startServer(t, Config{Backend: second})
	if got := converse(t, b, []byte("stats-tube p\r\n")); !strings.Contains(got, "\npause: 1\n") {
		t.Errorf("another server's stats-tube of the paused tube:\n%s", got)
	}
	if got := converse(t, b, []byte("watch p\r\nreserve-with-timeout 0\r\n")); got != "WATCHING 2\r\nTIMED_OUT\r\n" {
		t.Errorf("a reserve while paused: %q", got)
	}
	testwait.For(t, 10*time.Second, "the other server to resume the tube", func() bool {
		return converse(t, b, []byte("watch p\r\nreserve-with-timeout 0\r\n")) == "WATCHING 2\r\nRESERVED 1 1\r\nx\r\n"
	})
}

// TestLeaseExpiryMatchesBeanstalkd lets a reserved job's TTR pass with no other command on its
// tube, then asks what beanstalkd's clients ask: stats-job (ready, one timeout), the counts of
// stats and stats-tube, reserve-job of it, and delete by the connection that held it, which
// may delete a ready job as anyone may.
func TestLeaseExpiryMatchesBeanstalkd(t *testing.T) {
	counts := []string{"current-jobs-ready", "current-jobs-reserved", "current-jobs-delayed",
		"current-jobs-buried", "job-timeouts", "total-jobs"}
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a, b := dialPeer(t, addr), dialPeer(t, addr)
		tr.add("use", a.do("use ttr"))
		tr.add("watch", a.do("watch ttr"))
		tr.add("put", a.do("put 0 0 1 1", "1"))
		tr.add("put", a.do("put 0 0 1 1", "2"))
		tr.add("reserve", a.do("reserve-with-timeout 0"))
		tr.add("reserve", a.do("reserve-with-timeout 0"))
		time.Sleep(1500 * time.Millisecond) // both TTRs pass
		tr.add("stats-job", b.do("stats-job 1"))
		tr.add("stats", statsFields(b.do("stats"), counts...))
		tr.add("stats-tube", statsFields(b.do("stats-tube ttr"), counts...))
		tr.add("reserve-job", b.do("reserve-job 2"))
		tr.add("delete", a.do("delete 1"))
		tr.add("delete", a.do("delete 2"))
		tr.add("stats-job", b.do("stats-job 2"))
		tr.add("stats", statsFields(b.do("stats"), counts...))
		tr.add("delete", b.do("delete 2"))
		tr.add("stats", statsFields(b.do("stats"), counts...))
		return tr.String()
	})
}
