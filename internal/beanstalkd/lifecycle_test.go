package beanstalkd

import (
	"regexp"
	"strings"
	"testing"

	"github.com/delayq/delayq"
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
