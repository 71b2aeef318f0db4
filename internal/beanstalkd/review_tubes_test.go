package beanstalkd

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPausedTubeReserveWaitsForTheEnd wants a reserve on a paused tube holding a ready job to
// get it once the pause ends, and not before.
func TestPausedTubeReserveWaitsForTheEnd(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a, b := dialPeer(t, addr), dialPeer(t, addr)
		tr.add("put", a.do("put 0 0 10 1", "j"))
		tr.add("pause", a.do("pause-tube default 1"))
		tr.add("reserve now", b.do("reserve-with-timeout 0"))
		start := time.Now()
		tr.add("reserve waiting", b.do("reserve-with-timeout 4"))
		waited := time.Since(start)
		tr.add("waited about the pause", fmt.Sprint(waited > 500*time.Millisecond && waited < 2500*time.Millisecond))
		tr.add("stats-tube", a.do("stats-tube default"))
		return tr.String()
	})
}

// TestPauseOfAWatchedEmptyTube wants pause-tube of a tube that holds no job but is watched to
// answer PAUSED, and the tube listed and paused.
func TestPauseOfAWatchedEmptyTube(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a, b := dialPeer(t, addr), dialPeer(t, addr)
		tr.add("watch", a.do("watch p"))
		tr.add("pause", b.do("pause-tube p 60"))
		tr.add("list-tubes", b.do("list-tubes"))
		tr.add("stats-tube", b.do("stats-tube p"))
		tr.add("use", b.do("use p"))
		tr.add("put", b.do("put 0 0 10 1", "j"))
		tr.add("ignore", a.do("ignore default"))
		tr.add("reserve", a.do("reserve-with-timeout 0"))
		tr.add("stats-tube", b.do("stats-tube p"))
		return tr.String()
	})
}

// TestReserveOverAPausedAndAnOpenTube wants a reserve watching a paused tube and another to
// skip the paused one: TIMED_OUT when only the paused tube has a job, the other's job else.
func TestReserveOverAPausedAndAnOpenTube(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a := dialPeer(t, addr)
		tr.add("watch", a.do("watch p"))
		tr.add("pause", a.do("pause-tube p 60"))
		tr.add("reserve empty", a.do("reserve-with-timeout 0"))
		tr.add("use", a.do("use p"))
		tr.add("put", a.do("put 0 0 10 1", "p"))
		tr.add("reserve paused only", a.do("reserve-with-timeout 0"))
		tr.add("reserve paused only, waiting", a.do("reserve-with-timeout 1"))
		tr.add("use", a.do("use default"))
		tr.add("put", a.do("put 9 0 10 1", "d"))
		tr.add("reserve", a.do("reserve-with-timeout 0"))
		tr.add("stats-tube", a.do("stats-tube p"))
		return tr.String()
	})
}

// TestTubesThatAreNotTopicNames wants tubes whose names are not delayq topic names to behave
// as any other: listed, with stats, their name in stats-job.
func TestTubesThatAreNotTopicNames(t *testing.T) {
	long := strings.Repeat("l", 150)
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a, b := dialPeer(t, addr), dialPeer(t, addr)
		for i, tube := range []string{"a+b", "(x)", "_y", "$z;", long, "a/b"} {
			tr.add("use", a.do("use "+tube))
			tr.add("put", a.do("put 0 0 10 1", "j"))
			tr.add("stats-job", b.do(fmt.Sprintf("stats-job %d", i+1)))
			tr.add("peek-ready", a.do("peek-ready"))
			tr.add("stats-tube", b.do("stats-tube "+tube))
		}
		tr.add("use", a.do("use default"))
		tr.add("list-tubes (sorted)", sortedList(b.do("list-tubes")))
		tr.add("watch", b.do("watch _y"))
		tr.add("ignore", b.do("ignore default"))
		tr.add("reserve", b.do("reserve-with-timeout 0"))
		tr.add("delete", b.do("delete 3"))
		tr.add("stats-tube", b.do("stats-tube _y"))
		tr.add("pause", b.do("pause-tube (x) 60"))
		tr.add("stats-tube", b.do("stats-tube (x)"))
		return tr.String()
	})
}

// TestKickOfManyDelayedJobs wants kick to move as many delayed jobs as its bound allows.
func TestKickOfManyDelayedJobs(t *testing.T) {
	const n = 1200
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a := dialPeer(t, addr)
		tr.add("use", a.do("use many"))
		lines := make([]string, 0, 2*n)
		for range n {
			lines = append(lines, "put 0 100 10 1", "j")
		}
		a.send(lines...)
		for range n {
			if r := a.read(20 * time.Second); !strings.HasPrefix(r, "INSERTED") {
				t.Fatalf("put: %q", r)
			}
		}
		tr.add("kick", a.do("kick 5000"))
		tr.add("peek-delayed", a.do("peek-delayed"))
		return tr.String()
	})
}

// TestReserveAfterAKickOfManyDelayedJobs wants the most urgent job reserved after a kick made
// more than a thousand delayed jobs ready at once, however late it was due, and every kicked
// job counted urgent.
func TestReserveAfterAKickOfManyDelayedJobs(t *testing.T) {
	const n = 1100
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a := dialPeer(t, addr)
		tr.add("use", a.do("use many"))
		tr.add("watch", a.do("watch many"))
		tr.add("ignore", a.do("ignore default"))
		lines := make([]string, 0, 2*n+2)
		for range n {
			lines = append(lines, "put 5 100 10 1", "j")
		}
		lines = append(lines, "put 0 200 10 1", "u")
		a.send(lines...)
		for range n + 1 {
			if r := a.read(20 * time.Second); !strings.HasPrefix(r, "INSERTED") {
				t.Fatalf("put: %q", r)
			}
		}
		tr.add("kick", a.do("kick 5000"))
		tr.add("reserve", a.do("reserve-with-timeout 0"))
		tr.add("release", a.do(fmt.Sprintf("release %d 0 0", n+1)))
		tr.add("stats-tube", a.do("stats-tube many"))
		return tr.String()
	})
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
