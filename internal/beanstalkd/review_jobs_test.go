package beanstalkd

import (
	"testing"
	"time"
)

// TestMultiTubeReserveOrderMatchesBeanstalkd wants a reserve over several watched tubes to take
// the lowest priority, then the lowest id, across them; the jobs not taken keep their history.
func TestMultiTubeReserveOrderMatchesBeanstalkd(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		c := dialPeer(t, addr)
		for _, cmd := range []struct{ line, body string }{
			{"use a", ""}, {"put 5 0 10 2", "a1"}, {"use b", ""}, {"put 5 0 10 2", "b1"},
			{"put 1 0 10 2", "b2"}, {"use a", ""}, {"put 1 0 10 2", "a2"}, {"use c", ""}, {"put 0 0 10 2", "c1"},
		} {
			if cmd.body == "" {
				tr.add(cmd.line, c.do(cmd.line))
			} else {
				tr.add(cmd.line, c.do(cmd.line, cmd.body))
			}
		}
		for _, cmd := range []string{"watch a", "watch b", "ignore default",
			"reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0",
			"stats-job 1", "stats-job 2", "reserve-with-timeout 0", "reserve-with-timeout 0",
			"stats-job 5", "stats-tube a", "stats-tube b"} {
			tr.add(cmd, c.do(cmd))
		}
		return tr.String()
	})
}

// TestWaitingMultiTubeReserveGetsAJobPutLater wants a reserve waiting on two tubes to get a
// job put into either.
func TestWaitingMultiTubeReserveGetsAJobPutLater(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a, b := dialPeer(t, addr), dialPeer(t, addr)
		tr.add("watch", a.do("watch x"))
		tr.add("watch", a.do("watch y"))
		tr.add("ignore", a.do("ignore default"))
		a.send("reserve-with-timeout 4")
		b.pollReply("stats-tube y", "current-waiting: 1", 3*time.Second)
		tr.add("use", b.do("use y"))
		tr.add("put", b.do("put 3 0 10 1", "y"))
		tr.add("reserve", a.read(5*time.Second))
		tr.add("stats-job", b.do("stats-job 1"))
		a.send("reserve-with-timeout 4")
		b.pollReply("stats-tube x", "current-waiting: 1", 3*time.Second)
		tr.add("use", b.do("use x"))
		tr.add("put", b.do("put 3 0 10 1", "x"))
		tr.add("reserve", a.read(5*time.Second))
		tr.add("stats-job", b.do("stats-job 2"))
		return tr.String()
	})
}

// TestCommandsOnAnotherConnectionsJob wants release, bury, touch and delete of a job another
// connection holds answered NOT_FOUND, and the job left as it was.
func TestCommandsOnAnotherConnectionsJob(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a, b := dialPeer(t, addr), dialPeer(t, addr)
		tr.add("put", a.do("put 0 0 10 1", "j"))
		tr.add("reserve", a.do("reserve-with-timeout 0"))
		for _, cmd := range []string{"release 1 0 0", "bury 1 0", "touch 1", "delete 1", "kick-job 1",
			"reserve-job 1", "stats-job 1", "peek 1"} {
			tr.add(cmd, b.do(cmd))
		}
		tr.add("reserve-job own", a.do("reserve-job 1"))
		tr.add("stats-job", a.do("stats-job 1"))
		tr.add("delete", a.do("delete 1"))
		return tr.String()
	})
}

// TestDisconnectReleasesHeldJobs wants the jobs a closed connection held ready again, reserved
// next in their order, their history without a release.
func TestDisconnectReleasesHeldJobs(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a, b := dialPeer(t, addr), dialPeer(t, addr)
		for _, body := range []string{"1", "2", "3"} {
			tr.add("put", a.do("put 7 0 10 1", body))
		}
		for range 3 {
			tr.add("reserve", a.do("reserve-with-timeout 0"))
		}
		a.nc.Close()
		// The jobs come back one by one after the close; a stats-tube read meanwhile may count
		// one as ready before it is in the ready set (not yet urgent): poll for both.
		tr.add("stats-tube (polled)", b.pollReply("stats-tube default", "current-jobs-urgent: 3\ncurrent-jobs-ready: 3", 4*time.Second))
		for range 3 {
			tr.add("reserve", b.do("reserve-with-timeout 0"))
		}
		tr.add("stats-job", b.do("stats-job 2"))
		return tr.String()
	})
}

// TestKickAndKickJobStates wants kick to prefer buried jobs, bounded, then delayed ones due
// first; kick-job of a ready or reserved job NOT_FOUND; reserve-job of buried and delayed jobs.
func TestKickAndKickJobStates(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a, b := dialPeer(t, addr), dialPeer(t, addr)
		tr.add("put", a.do("put 0 0 10 1", "1"))
		tr.add("put", a.do("put 0 0 10 1", "2"))
		tr.add("put", a.do("put 0 0 10 1", "3"))
		tr.add("put", a.do("put 0 300 10 1", "4"))
		tr.add("put", a.do("put 0 200 10 1", "5"))
		tr.add("put", a.do("put 0 100 10 1", "6"))
		tr.add("reserve", a.do("reserve-with-timeout 0"))
		tr.add("bury", a.do("bury 1 9"))
		tr.add("reserve", a.do("reserve-with-timeout 0"))
		tr.add("kick-job reserved", b.do("kick-job 2"))
		tr.add("kick-job ready", b.do("kick-job 3"))
		tr.add("bury", a.do("bury 2 9"))
		tr.add("kick 0", b.do("kick 0"))
		tr.add("kick 1", b.do("kick 1"))
		tr.add("peek-buried", b.do("peek-buried"))
		tr.add("kick 5", b.do("kick 5"))
		tr.add("kick 2", b.do("kick 2"))
		tr.add("peek-delayed", b.do("peek-delayed"))
		tr.add("reserve-job delayed", b.do("reserve-job 4"))
		tr.add("stats-job", b.do("stats-job 4"))
		tr.add("release", b.do("release 4 0 0"))
		tr.add("reserve", a.do("reserve-with-timeout 0"))
		tr.add("bury", a.do("bury 1 0"))
		tr.add("reserve-job buried", b.do("reserve-job 1"))
		tr.add("stats-job", b.do("stats-job 1"))
		tr.add("stats-tube", b.do("stats-tube default"))
		return tr.String()
	})
}

// TestPeekDelayedAfterReleasesWithDelays wants peek-delayed to show the job due first.
func TestPeekDelayedAfterReleasesWithDelays(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a := dialPeer(t, addr)
		for _, body := range []string{"1", "2", "3"} {
			tr.add("put", a.do("put 0 0 10 1", body))
		}
		tr.add("put delayed", a.do("put 0 100 10 1", "4"))
		tr.add("reserve", a.do("reserve-with-timeout 0"))
		tr.add("reserve", a.do("reserve-with-timeout 0"))
		tr.add("release", a.do("release 1 0 50"))
		tr.add("peek-delayed", a.do("peek-delayed"))
		tr.add("release", a.do("release 2 0 20"))
		tr.add("peek-delayed", a.do("peek-delayed"))
		tr.add("peek-ready", a.do("peek-ready"))
		tr.add("stats-job", a.do("stats-job 2"))
		tr.add("kick 1", a.do("kick 1"))
		tr.add("peek-delayed", a.do("peek-delayed"))
		tr.add("peek-ready", a.do("peek-ready"))
		tr.add("stats-tube", a.do("stats-tube default"))
		return tr.String()
	})
}
