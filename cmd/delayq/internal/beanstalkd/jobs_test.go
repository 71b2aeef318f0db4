package beanstalkd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/backend"
	"github.com/delayq/delayq/delayqtest"
	"github.com/delayq/delayq/internal/testwait"
)

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

// TestKick: kick and kick-job move buried and delayed jobs as beanstalkd does.
func TestKick(t *testing.T) {
	// Jobs buried in the same millisecond are kicked, and
	// peeked, in the order they were buried, not in id order.
	t.Run("buried first", func(t *testing.T) {
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
	})

	// Wants kick to prefer buried jobs, bounded, then delayed ones due
	// first; kick-job of a ready or reserved job NOT_FOUND; reserve-job of buried and delayed jobs.
	t.Run("kick and kick-job by state", func(t *testing.T) {
		differ(t, func(t *testing.T, addr string) string {
			var tr transcript
			a, b := dial(t, addr), dial(t, addr)
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
	})

	// Kick of delayed jobs takes those due first, over
	// partitions too, and the kicked jobs go out by priority and id; stats-job counts the kick.
	t.Run("delayed due first", func(t *testing.T) {
		eachPartitioning(t, func(t *testing.T, cfg delayq.Config) {
			differWith(t, cfg, func(t *testing.T, addr string) string {
				cmds := []string{"use k", "watch k", "ignore default"}
				for i, d := range []int{500, 300, 900, 100, 700, 200, 800, 600, 400, 1000} {
					cmds = append(cmds, fmt.Sprintf("put %d %d 10 1", 9-i%3, d), "body:"+string(rune('a'+i)))
				}
				cmds = append(cmds, "kick 3", "peek-delayed", "stats-tube k", "stats-job 4", "stats-job 1",
					"reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0",
					"kick 2", "peek-delayed", "peek-ready", "kick-job 3", "kick-job 3", "peek-ready", "stats-job 3",
					"reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0")
				return script(t, addr, cmds...)
			})
		})
	})

	// With buried and delayed jobs, kick takes the buried only
	// (in burial order, over partitions too), they go out by priority after the kick, and only a
	// kick with no buried left takes delayed jobs.
	t.Run("buried before delayed", func(t *testing.T) {
		eachPartitioning(t, func(t *testing.T, cfg delayq.Config) {
			differWith(t, cfg, func(t *testing.T, addr string) string {
				cmds := []string{"use kb", "watch kb", "ignore default"}
				for i := range 8 {
					cmds = append(cmds, fmt.Sprintf("put %d 0 10 1", 10+i%4), "body:"+string(rune('a'+i)))
				}
				cmds = append(cmds, "put 0 100 10 1", "body:D", "put 1 200 10 1", "body:E")
				for range 8 {
					cmds = append(cmds, "reserve-with-timeout 0")
				}
				for _, id := range []int{5, 2, 8, 1, 7, 3, 6, 4} {
					cmds = append(cmds, fmt.Sprintf("bury %d %d", id, 20-id))
				}
				cmds = append(cmds, "peek-buried", "kick 3", "peek-buried", "stats-tube kb",
					"reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0",
					"kick 100", "stats-tube kb", "kick 1", "peek-delayed", "kick-job 10", "stats-tube kb",
					"reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0",
					"reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0")
				return script(t, addr, cmds...)
			})
		})
	})

	// A job released with a delay is kicked by kick-job
	// and by kick, keeps its new priority, and stats-job says so.
	t.Run("kick-job of a released delayed job", func(t *testing.T) {
		eachPartitioning(t, func(t *testing.T, cfg delayq.Config) {
			differWith(t, cfg, func(t *testing.T, addr string) string {
				return script(t, addr, "use rk", "watch rk", "ignore default",
					"put 5 0 10 1", "body:a", "put 5 0 10 1", "body:b", "put 5 0 10 1", "body:c",
					"reserve-with-timeout 0", "release 1 1 100", "reserve-with-timeout 0", "release 2 9 50",
					"stats-job 1", "peek-delayed", "kick-job 1", "stats-job 1", "kick 1", "stats-job 2",
					"reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0", "reserve-with-timeout 0")
			})
		})
	})

	// Wants kick to move as many delayed jobs as its bound allows.
	t.Run("many delayed jobs", func(t *testing.T) {
		const n = 1200
		differ(t, func(t *testing.T, addr string) string {
			var tr transcript
			a := dial(t, addr)
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
	})

	// Wants the most urgent job reserved after a kick made
	// more than a thousand delayed jobs ready at once, however late it was due, and every kicked
	// job counted urgent.
	t.Run("reserve after a kick of many delayed jobs", func(t *testing.T) {
		const n = 1100
		differ(t, func(t *testing.T, addr string) string {
			var tr transcript
			a := dial(t, addr)
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
	})
}

// TestReserveOrder: reserve takes the lowest priority, then the lowest id, as beanstalkd does.
func TestReserveOrder(t *testing.T) {
	// On a topic of several partitions (a Redis Cluster's default), jobs
	// of equal priority still go out in id order, and a more urgent one first, as from one.
	t.Run("over partitions", func(t *testing.T) {
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
	})

	// Over eight partitions, jobs of mixed priorities,
	// released with new priorities, buried and kicked, go out (and peek-ready shows them) by
	// priority, then id, as beanstalkd.
	t.Run("over partitions with releases", func(t *testing.T) {
		differWith(t, delayq.Config{Partitions: 8}, func(t *testing.T, addr string) string {
			cmds := []string{"use o", "watch o", "ignore default"}
			for i := range 24 {
				cmds = append(cmds, fmt.Sprintf("put %d 0 10 1", []int{7, 3, 7, 1, 3, 7}[i%6]), "body:"+string(rune('a'+i)))
			}
			cmds = append(cmds, "peek-ready")
			for range 6 {
				cmds = append(cmds, "reserve-with-timeout 0")
			}
			// The six reserved: ids 4, 10, 16, 22 (pri 1), then 2, 5 (pri 3).
			cmds = append(cmds, "release 4 9 0", "release 10 3 0", "release 16 0 0", "bury 22 5", "release 2 7 0", "release 5 3 0",
				"peek-ready", "kick 1", "peek-ready", "stats-tube o")
			for range 26 {
				cmds = append(cmds, "reserve-with-timeout 0")
			}
			return script(t, addr, cmds...)
		})
	})

	// Wants a reserve over several watched tubes to take
	// the lowest priority, then the lowest id, across them; the jobs not taken keep their history.
	t.Run("over several tubes", func(t *testing.T) {
		differ(t, func(t *testing.T, addr string) string {
			var tr transcript
			c := dial(t, addr)
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
	})

	// A reserve over two tubes takes the more urgent job;
	// the other tube's job, taken and given back, was not reserved (stats-job reserves 0), and
	// the tubes' stats are as beanstalkd's.
	t.Run("given back job is not reserved", func(t *testing.T) {
		differ(t, func(t *testing.T, addr string) string {
			c := dial(t, addr)
			var tr transcript
			for _, cmd := range []string{"use a"} {
				tr.add(cmd, c.do(cmd))
			}
			tr.add("put a", c.do("put 5 0 10 1", "a"))
			tr.add("use b", c.do("use b"))
			tr.add("put b", c.do("put 0 0 10 1", "b"))
			tr.add("put b2", c.do("put 5 0 10 1", "c"))
			for _, cmd := range []string{"watch a", "watch b", "ignore default", "reserve-with-timeout 0",
				"stats-job 1", "stats-job 3", "reserve-with-timeout 0", "stats-job 1", "stats-job 3",
				"stats-tube a", "stats-tube b"} {
				tr.add(cmd, c.do(cmd))
			}
			return tr.String()
		})
	})

	// Wants peek-ready to show the job a reserve would get:
	// the lowest priority, then the lowest id, whatever order the jobs were put in.
	t.Run("peek-ready shows the most urgent", func(t *testing.T) {
		b := newDelayqBackend(t)
		ctx := context.Background()
		var urgent uint64
		for _, pri := range []uint32{100, 1, 50, 1} {
			id, _, err := b.Put(ctx, "peek", pri, 0, time.Minute, []byte("body"))
			if err != nil {
				t.Fatal(err)
			}
			if pri == 1 && urgent == 0 {
				urgent = id
			}
		}
		j, err := b.PeekState(ctx, "peek", "ready")
		if err != nil {
			t.Fatal(err)
		}
		if j.ID != urgent {
			t.Errorf("peek-ready shows job %d; want %d, the first put with priority 1", j.ID, urgent)
		}
	})
}

// TestLeaseExpiryMatchesBeanstalkd lets reserved jobs' TTRs pass with no other command on
// their tube, then asks what beanstalkd's clients ask: stats-job (ready, one timeout), the
// counts of stats and stats-tube, reserve-job of one, and delete by the connections that held
// them: a ready job may be deleted by anyone, a job reserved again by its new holder only.
func TestLeaseExpiryMatchesBeanstalkd(t *testing.T) {
	counts := []string{"current-jobs-ready", "current-jobs-reserved", "current-jobs-delayed",
		"current-jobs-buried", "job-timeouts", "total-jobs"}
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		// Each job is held by a connection of its own, which alone asks about it while its TTR
		// passes: beanstalkd 1.12 now and then leaves a job of an idle connection reserved
		// long past its TTR (time-left -20; beanstalkd #262, #380), which no client should
		// rely on, and a command on the holder's connection keeps it to its TTR.
		a, b, c := dial(t, addr), dial(t, addr), dial(t, addr)
		tr.add("use", b.do("use ttr"))
		tr.add("put", b.do("put 0 0 2 1", "1"))
		tr.add("put", b.do("put 0 0 2 1", "2"))
		for _, p := range []*peer{a, c} {
			tr.add("watch", p.do("watch ttr"))
			tr.add("reserve", p.do("reserve"))
		}
		// Both TTRs pass. A loaded machine may make either server late by some hundreds of
		// milliseconds: wait until each says so, asking only stats-job, which moves nothing.
		time.Sleep(2 * time.Second)
		a.pollReply("stats-job 1", "state: ready", 10*time.Second)
		c.pollReply("stats-job 2", "state: ready", 10*time.Second)
		tr.add("stats-job", b.do("stats-job 1"))
		tr.add("stats", statsFields(b.do("stats"), counts...))
		tr.add("stats-tube", statsFields(b.do("stats-tube ttr"), counts...))
		tr.add("reserve-job", b.do("reserve-job 2"))
		tr.add("delete", a.do("delete 1"))
		tr.add("delete", c.do("delete 2"))
		tr.add("stats-job", b.do("stats-job 2"))
		tr.add("stats", statsFields(b.do("stats"), counts...))
		tr.add("delete", b.do("delete 2"))
		tr.add("stats", statsFields(b.do("stats"), counts...))
		return tr.String()
	})
}

// TestWaitingMultiTubeReserveGetsAJobPutLater wants a reserve waiting on two tubes to get a
// job put into either.
func TestWaitingMultiTubeReserveGetsAJobPutLater(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a, b := dial(t, addr), dial(t, addr)
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
		a, b := dial(t, addr), dial(t, addr)
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

// TestPeekDelayedAfterReleasesWithDelays wants peek-delayed to show the job due first.
func TestPeekDelayedAfterReleasesWithDelays(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		return script(t, addr,
			"put 0 0 10 1", "body:1",
			"put 0 0 10 1", "body:2",
			"put 0 0 10 1", "body:3",
			"put 0 100 10 1", "body:4",
			"reserve-with-timeout 0",
			"reserve-with-timeout 0",
			"release 1 0 50",
			"peek-delayed",
			"release 2 0 20",
			"peek-delayed",
			"peek-ready",
			"stats-job 2",
			"kick 1",
			"peek-delayed",
			"peek-ready",
			"stats-tube default",
		)
	})
}

// TestBuriedJobDeletedByAnotherConnection wants a buried job deletable by any connection, and
// a released-with-delay one too.
func TestBuriedJobDeletedByAnotherConnection(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		var tr transcript
		a, b := dial(t, addr), dial(t, addr)
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

// TestHangup: a connection that goes away strands no job.
func TestHangup(t *testing.T) {
	// Wants a job put after a waiting client went away to be
	// ready for the next.
	t.Run("while waiting loses no job", func(t *testing.T) {
		differ(t, func(t *testing.T, addr string) string {
			var tr transcript
			a, b := dial(t, addr), dial(t, addr)
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
	})

	// Connections that reserve and hang up, some right after the
	// command and some while waiting when jobs arrive, leave no job reserved: every job is ready
	// again at once, not after its TTR.
	t.Run("reserving connections strand no job", func(t *testing.T) {
		addr := startServer(t, Config{Backend: newDelayqBackend(t)})
		const jobs = 40
		// Waiters first, on an empty tube.
		var waiters []*peer
		for range 20 {
			p := dial(t, addr)
			p.send("watch hang", "reserve-with-timeout 5")
			waiters = append(waiters, p)
		}
		c := dial(t, addr)
		c.do("use hang")
		c.pollReply("stats-tube hang", "current-waiting: 20", 5*time.Second)
		var wg sync.WaitGroup
		wg.Go(func() {
			for range jobs {
				c.send("put 0 0 120 1", "x")
			}
		})
		for _, p := range waiters {
			wg.Go(p.close)
		}
		// And connections that ask for a job ready now and leave at once.
		for range 20 {
			p := dial(t, addr)
			wg.Go(func() {
				_ = p.nc.SetWriteDeadline(time.Now().Add(conversationTimeout))
				_, _ = p.nc.Write([]byte("watch hang\r\nreserve-with-timeout 0\r\n"))
				p.close()
			})
		}
		wg.Wait()
		for range jobs {
			if r := c.read(conversationTimeout); !strings.HasPrefix(r, "INSERTED ") {
				t.Fatalf("put: %q", r)
			}
		}
		var st string
		testwait.For(t, 10*time.Second, "every job ready again", func() bool {
			st = c.do("stats-tube hang")
			return statField(st, "current-jobs-ready") == jobs && statField(st, "current-jobs-reserved") == 0
		})
	})

	// Connections waiting on two tubes hang up
	// while jobs arrive in both at once; no job stays reserved.
	t.Run("over several tubes", func(t *testing.T) {
		addr := startServer(t, Config{Backend: newDelayqBackend(t)})
		const jobs = 30
		var waiters []*peer
		for range 20 {
			p := dial(t, addr)
			p.send("watch h1", "watch h2", "reserve-with-timeout 5")
			waiters = append(waiters, p)
		}
		c1, c2 := dial(t, addr), dial(t, addr)
		c1.do("use h1")
		c2.do("use h2")
		c1.pollReply("stats-tube h1", "current-waiting: 20", 5*time.Second)
		var wg sync.WaitGroup
		for _, c := range []*peer{c1, c2} {
			wg.Go(func() {
				for range jobs {
					c.send("put 0 0 120 1", "x")
				}
			})
		}
		for _, p := range waiters {
			wg.Go(p.close)
		}
		wg.Wait()
		for _, c := range []*peer{c1, c2} {
			for range jobs {
				if r := c.read(conversationTimeout); !strings.HasPrefix(r, "INSERTED ") {
					t.Fatalf("put: %q", r)
				}
			}
		}
		for _, tube := range []string{"h1", "h2"} {
			testwait.For(t, 10*time.Second, "every job of "+tube+" ready again", func() bool {
				st := c1.do("stats-tube " + tube)
				return statField(st, "current-jobs-ready") == jobs && statField(st, "current-jobs-reserved") == 0
			})
		}
	})

	// Wants the jobs a closed connection held ready again, reserved
	// next in their order, their history without a release.
	t.Run("releases held jobs", func(t *testing.T) {
		differ(t, func(t *testing.T, addr string) string {
			var tr transcript
			a, b := dial(t, addr), dial(t, addr)
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
	})
}

// TestExtremeFieldsOfStoredJobs wants the largest priority, delay and TTR beanstalkd takes to
// be stored and reported, through put, release and stats-job.
func TestExtremeFieldsOfStoredJobs(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		return script(t, addr,
			"put 4294967295 0 4294967295 1", "body:1",
			"put 0 4294967295 10 1", "body:2",
			"stats-job 1",
			"stats-job 2",
			"reserve-with-timeout 0",
			"release 1 4294967295 4294967295",
			"stats-job 1",
			"peek-delayed",
			"kick 10",
			"reserve-with-timeout 0",
			"bury 2 4294967295",
			"stats-job 2",
		)
	})
}

// TestLibraryJobThroughItsWholeBeanstalkdLife wants a job enqueued with the Go library into a
// tube's topic to keep one beanstalkd id through peek, reserve, release, bury, kick and delete,
// and the delete to remove it from the store.
func TestLibraryJobThroughItsWholeBeanstalkdLife(t *testing.T) {
	dq := delayqtest.NewClient(t, delayq.Config{})
	addr := startServer(t, Config{Backend: backend.New(dq, slog.New(slog.DiscardHandler))})
	ctx := context.Background()
	job, err := dq.Enqueue(ctx, "lib", delayq.Spec{Body: []byte("hello")})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, addr)
	c.do("watch lib")
	c.do("ignore default")
	c.do("use lib")
	peeked := c.do("peek-ready")
	var n uint64
	if _, err := fmt.Sscanf(peeked, "FOUND %d 5\r\nhello\r\n", &n); err != nil {
		t.Fatalf("peek-ready: %q", peeked)
	}
	steps := []struct{ cmd, want string }{
		{"reserve-with-timeout 0", fmt.Sprintf("RESERVED %d 5\r\nhello\r\n", n)},
		{fmt.Sprintf("release %d 10 0", n), "RELEASED\r\n"},
		{"reserve-with-timeout 0", fmt.Sprintf("RESERVED %d 5\r\nhello\r\n", n)},
		{fmt.Sprintf("bury %d 3", n), "BURIED\r\n"},
		{"peek-buried", fmt.Sprintf("FOUND %d 5\r\nhello\r\n", n)},
		{"kick 1", "KICKED 1\r\n"},
		{"reserve-with-timeout 0", fmt.Sprintf("RESERVED %d 5\r\nhello\r\n", n)},
		{fmt.Sprintf("delete %d", n), "DELETED\r\n"},
		{fmt.Sprintf("peek %d", n), "NOT_FOUND\r\n"},
		{"reserve-with-timeout 0", "TIMED_OUT\r\n"},
	}
	for _, s := range steps {
		if got := c.do(s.cmd); got != s.want {
			t.Errorf("%s: %q; want %q", s.cmd, got, s.want)
		}
	}
	if _, err := dq.Get(ctx, "lib", job.ID); !errors.Is(err, delayq.ErrNotFound) {
		t.Errorf("Get after the beanstalkd delete: %v; want ErrNotFound", err)
	}
}

// TestJobThatKeepsItsIDIsNotFound wants a job that ended and keeps its id taken for its
// unique_for to be NOT_FOUND under its beanstalkd id, as any job gone is: one enqueued with the
// Go library and met by a beanstalkd client, and one put over beanstalkd into a topic whose
// default keeps ids taken.
func TestJobThatKeepsItsIDIsNotFound(t *testing.T) {
	dq := delayqtest.NewClient(t, delayq.Config{})
	addr := startServer(t, Config{Backend: backend.New(dq, slog.New(slog.DiscardHandler))})
	ctx := context.Background()
	job, err := dq.Enqueue(ctx, "lib", delayq.Spec{ID: "order-1", Body: []byte("hello"), UniqueFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := dq.SetTopicDefaults(ctx, "lib", delayq.TopicDefaults{UniqueFor: time.Hour}); err != nil {
		t.Fatal(err)
	}
	c := dial(t, addr)
	c.do("use lib")
	var n uint64
	if _, err := fmt.Sscanf(c.do("peek-ready"), "FOUND %d 5\r\nhello\r\n", &n); err != nil {
		t.Fatal(err)
	}
	if err := dq.Cancel(ctx, "lib", job.ID); err != nil {
		t.Fatal(err)
	}
	var put uint64
	if _, err := fmt.Sscanf(c.do("put 0 0 60 3\r\nbye"), "INSERTED %d\r\n", &put); err != nil {
		t.Fatal(err)
	}
	if got := c.do(fmt.Sprintf("delete %d", put)); got != "DELETED\r\n" {
		t.Fatalf("delete of the put job: %q", got)
	}
	for _, id := range []uint64{n, put} {
		for _, cmd := range []string{"peek %d", "stats-job %d", "kick-job %d", "delete %d"} {
			if got := c.do(fmt.Sprintf(cmd, id)); got != "NOT_FOUND\r\n" {
				t.Errorf("%s: %q; want NOT_FOUND", fmt.Sprintf(cmd, id), got)
			}
		}
	}
}

// TestReleaseWithADelayIsASnooze wants a beanstalkd release with a delay to be the snooze of
// the HTTP API and the Go library: the job counts it, keeps its attempts, and past its
// max_snoozes is buried (dead) with the reason; a release without a delay counts nothing.
func TestReleaseWithADelayIsASnooze(t *testing.T) {
	dq := delayqtest.NewClient(t, delayq.Config{})
	addr := startServer(t, Config{Backend: backend.New(dq, slog.New(slog.DiscardHandler))})
	ctx := context.Background()
	job, err := dq.Enqueue(ctx, "lib", delayq.Spec{Body: []byte("hello"), MaxSnoozes: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, addr)
	c.do("watch lib")
	c.do("ignore default")
	var n uint64
	if _, err := fmt.Sscanf(c.do("reserve-with-timeout 0"), "RESERVED %d 5\r\nhello\r\n", &n); err != nil {
		t.Fatalf("reserve: %v", err)
	}
	get := func() *delayq.Job {
		t.Helper()
		j, err := dq.Get(ctx, "lib", job.ID)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	if got := c.do(fmt.Sprintf("release %d 10 0", n)); got != "RELEASED\r\n" {
		t.Fatalf("release without a delay: %q", got)
	}
	if j := get(); j.Snoozes != 0 {
		t.Fatalf("a release without a delay counted %d snoozes; want 0", j.Snoozes)
	}
	c.do("reserve-with-timeout 0")
	if got := c.do(fmt.Sprintf("release %d 10 1", n)); got != "RELEASED\r\n" {
		t.Fatalf("release with a delay: %q", got)
	}
	if j := get(); j.Snoozes != 1 || j.Attempts != 0 || j.State != delayq.StateDelayed {
		t.Fatalf("after a release with a delay: snoozes %d, attempts %d, state %s; want 1, 0, delayed", j.Snoozes, j.Attempts, j.State)
	}
	delayqtest.AdvanceClock(dq, 2*time.Second)
	if got := c.do("reserve-with-timeout 0"); got != fmt.Sprintf("RESERVED %d 5\r\nhello\r\n", n) {
		t.Fatalf("reserve after the delay: %q", got)
	}
	if got := c.do(fmt.Sprintf("release %d 10 1", n)); got != "BURIED\r\n" {
		t.Fatalf("a snooze past max_snoozes: %q; want BURIED", got)
	}
	if j := get(); j.State != delayq.StateDead || j.Snoozes != 2 || j.LastError != "snoozed more than max_snoozes (1) times" {
		t.Fatalf("past max_snoozes: state %s, snoozes %d, last error %q; want dead, 2, and why", j.State, j.Snoozes, j.LastError)
	}
}

// TestPutIDs: the ids put answers are unique, increase, and name their jobs.
func TestPutIDs(t *testing.T) {
	// Puts from many connections at once, to
	// tubes of valid and of hashed topic names, get ids that are unique and, on each connection,
	// increasing; stats-tube and stats count every put once.
	t.Run("concurrent puts get unique increasing ids", func(t *testing.T) {
		addr := startServer(t, Config{Backend: newDelayqBackend(t)})
		const conns, puts = 16, 40
		tubes := []string{"ids-a", "ids-b", "ids+c", "_ids-d"}
		peers := make([]*peer, conns)
		for i := range peers {
			peers[i] = dial(t, addr)
		}
		got := make([][]uint64, conns)
		errs := make(chan error, conns)
		var wg sync.WaitGroup
		for i, p := range peers {
			wg.Go(func() {
				tube := tubes[i%len(tubes)]
				if r, err := p.try("use " + tube); err != nil || r != "USING "+tube+"\r\n" {
					errs <- fmt.Errorf("use %s: %q, %v", tube, r, err)
					return
				}
				for k := range puts {
					r, err := p.try("put 1 0 60 1", "x")
					n, ok := replyID(r)
					if err != nil || !ok || !strings.HasPrefix(r, "INSERTED ") {
						errs <- fmt.Errorf("connection %d, put %d: %q, %v", i, k, r, err)
						return
					}
					got[i] = append(got[i], n)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		seen := map[uint64]int{}
		for i, ns := range got {
			for k, n := range ns {
				if k > 0 && n <= ns[k-1] {
					t.Errorf("connection %d: put %d got id %d after %d", i, k, n, ns[k-1])
				}
				if j, dup := seen[n]; dup {
					t.Errorf("id %d issued to connections %d and %d", n, j, i)
				}
				seen[n] = i
			}
		}
		c := dial(t, addr)
		for i, tube := range tubes {
			want := int64(conns / len(tubes) * puts)
			if i < conns%len(tubes) {
				want += puts
			}
			st := c.do("stats-tube " + tube)
			if tj, r := statField(st, "total-jobs"), statField(st, "current-jobs-ready"); tj != want || r != want {
				t.Errorf("stats-tube %s: total-jobs %d, current-jobs-ready %d; want %d, %d", tube, tj, r, want, want)
			}
		}
		if tj := statField(c.do("stats"), "total-jobs"); tj != conns*puts {
			t.Errorf("stats: total-jobs %d; want %d", tj, conns*puts)
		}
	})

	// A put the delayq Client refuses (its body is over the
	// Client's MaxBody, though under the server's max-job-size) is answered JOB_TOO_BIG, its id
	// names nothing, the next put gets a later id, and neither stats-tube's nor stats' total-jobs
	// counts it: beanstalkd counts the jobs it made.
	t.Run("failed put counts no job", func(t *testing.T) {
		addr := startServer(t, Config{Backend: newDelayqBackendWith(t, delayq.Config{Limits: delayq.Limits{MaxBody: 8}})})
		c := dial(t, addr)
		c.do("use fail")
		first, _ := replyID(c.do("put 0 0 60 4", "abcd"))
		if r := c.do("put 0 0 60 16", strings.Repeat("y", 16)); r != "JOB_TOO_BIG\r\n" {
			t.Errorf("a put over the Client's MaxBody: %q; want JOB_TOO_BIG", r)
		}
		if r := c.do(fmt.Sprintf("peek %d", first+1)); r != "NOT_FOUND\r\n" {
			t.Errorf("peek of the refused put's id: %q; want NOT_FOUND", r)
		}
		third, ok := replyID(c.do("put 0 0 60 4", "efgh"))
		if !ok || third <= first {
			t.Errorf("the put after a refused one got id %d (ok %v); want more than %d", third, ok, first)
		}
		st := c.do("stats-tube fail")
		if tj := statField(st, "total-jobs"); tj != 2 {
			t.Errorf("stats-tube total-jobs after 2 puts and one refused: %d; want 2\n%s", tj, st)
		}
		if tj := statField(c.do("stats"), "total-jobs"); tj != 2 {
			t.Errorf("stats total-jobs after 2 puts and one refused: %d; want 2", tj)
		}
	})

	// Two servers on one Redis, taking puts at once, never
	// issue one id twice, and each connection's ids increase.
	t.Run("two servers issue unique ids", func(t *testing.T) {
		newBackend := sharedBackends(t)
		addrs := []string{startServer(t, Config{Backend: newBackend()}), startServer(t, Config{Backend: newBackend()})}
		const conns, puts = 8, 50
		peers := make([]*peer, conns)
		for i := range peers {
			peers[i] = dial(t, addrs[i%2])
		}
		got := make([][]uint64, conns)
		var wg sync.WaitGroup
		for i, p := range peers {
			wg.Go(func() {
				for range puts {
					r, _ := p.try("put 0 0 60 1", "x")
					if n, ok := replyID(r); ok {
						got[i] = append(got[i], n)
					}
				}
			})
		}
		wg.Wait()
		seen := map[uint64]bool{}
		for i, ns := range got {
			if len(ns) != puts {
				t.Errorf("connection %d: %d of %d puts inserted", i, len(ns), puts)
			}
			for k, n := range ns {
				if k > 0 && n <= ns[k-1] {
					t.Errorf("connection %d: id %d after %d", i, n, ns[k-1])
				}
				if seen[n] {
					t.Errorf("id %d issued twice", n)
				}
				seen[n] = true
			}
		}
		if tj := statField(converse(t, addrs[1], []byte("stats-tube default\r\n")), "total-jobs"); tj != conns*puts {
			t.Errorf("stats-tube default total-jobs: %d; want %d", tj, conns*puts)
		}
	})

	// Every id issued to concurrent puts names its job: peek
	// shows its body, stats-job its tube (a hashed topic's too).
	t.Run("every id names its job", func(t *testing.T) {
		addr := startServer(t, Config{Backend: newDelayqBackend(t)})
		tubes := []string{"ix-a", "ix+b"}
		peers := []*peer{dial(t, addr), dial(t, addr), dial(t, addr), dial(t, addr)}
		type put struct {
			id   uint64
			tube string
			body string
		}
		got := make([][]put, len(peers))
		var wg sync.WaitGroup
		for i, p := range peers {
			wg.Go(func() {
				tube := tubes[i%2]
				p.try("use " + tube)
				for k := range 50 {
					body := fmt.Sprintf("%d-%02d", i, k)
					r, _ := p.try(fmt.Sprintf("put 0 0 60 %d", len(body)), body)
					if id, ok := replyID(r); ok {
						got[i] = append(got[i], put{id, tube, body})
					}
				}
			})
		}
		wg.Wait()
		c := dial(t, addr)
		for i, ps := range got {
			if len(ps) != 50 {
				t.Fatalf("connection %d: %d puts of 50 inserted", i, len(ps))
			}
			for _, p := range ps {
				if r := c.do(fmt.Sprintf("peek %d", p.id)); r != fmt.Sprintf("FOUND %d %d\r\n%s\r\n", p.id, len(p.body), p.body) {
					t.Errorf("peek %d: %q; want body %q", p.id, r, p.body)
				}
				if r := c.do(fmt.Sprintf("stats-job %d", p.id)); !strings.Contains(r, "\ntube: "+p.tube+"\n") {
					t.Errorf("stats-job %d: want tube %s:\n%s", p.id, p.tube, r)
				}
			}
		}
	})
}

// TestConcurrentReserves: reserves from many connections at once hand out each job once, in order.
func TestConcurrentReserves(t *testing.T) {
	// Connections that reserve without a wait at
	// once (one library Reserve serves them) each get a different job, none is skipped, and each
	// connection's jobs come in priority, then id order.
	t.Run("each job once", func(t *testing.T) {
		for _, parts := range []int{1, 8} {
			t.Run(fmt.Sprintf("partitions=%d", parts), func(t *testing.T) {
				addr := startServer(t, Config{Backend: newDelayqBackendWith(t, delayq.Config{Partitions: parts})})
				pris := putJobs(t, addr, "once", 300, func(i int) int { return (i * 7) % 5 })
				checkDrained(t, pris, drainConcurrently(t, addr, 12, []string{"once"}))
			})
		}
	})

	// Connections watching two tubes, of
	// one partition and of eight, reserving at once, get every job once, each connection's in
	// priority, then id order.
	t.Run("over partitions and tubes", func(t *testing.T) {
		eachPartitioning(t, func(t *testing.T, cfg delayq.Config) {
			addr := startServer(t, Config{Backend: newDelayqBackendWith(t, cfg)})
			for range 3 {
				pris := putJobs(t, addr, "pa", 300, func(i int) int { return (i * 3) % 7 })
				for id, p := range putJobs(t, addr, "pb", 300, func(i int) int { return (i * 5) % 7 }) {
					pris[id] = p
				}
				checkDrained(t, pris, drainConcurrently(t, addr, 16, []string{"pa", "pb"}))
			}
		})
	})

	// A Client whose Limits.MaxReserve is below
	// the reserves waiting at once still serves each of them.
	t.Run("over a small MaxReserve", func(t *testing.T) {
		addr := startServer(t, Config{Backend: newDelayqBackendWith(t, delayq.Config{Limits: delayq.Limits{MaxReserve: 2}})})
		pris := putJobs(t, addr, "small", 300, func(i int) int { return i % 3 })
		checkDrained(t, pris, drainConcurrently(t, addr, 16, []string{"small"}))
	})

	// Connections watching two tubes
	// take the more urgent tube's jobs (and, for a moment, the other's one job, which they give
	// back); meanwhile a connection watching only the other tube, reserving and releasing its one
	// job, never hears TIMED_OUT: the job is ready all along, as in beanstalkd.
	t.Run("never time out on a ready job", func(t *testing.T) {
		addr := startServer(t, Config{Backend: newDelayqBackend(t)})
		const urgent, rounds = 3000, 300
		putJobs(t, addr, "hot", urgent, func(int) int { return 0 })
		var cold uint64
		for id := range putJobs(t, addr, "cold", 1, func(int) int { return 10 }) {
			cold = id
		}
		multi := make([]*peer, 8)
		for i := range multi {
			multi[i] = dial(t, addr)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, len(multi)+1)
		for _, p := range multi {
			wg.Go(func() {
				p.try("watch hot")
				p.try("watch cold")
				p.try("ignore default")
				for {
					select {
					case <-stop:
						return
					default:
					}
					r, err := p.try("reserve-with-timeout 0")
					id, ok := replyID(r)
					if err != nil || !ok {
						return // hot is empty, or cold's job is with the single connection
					}
					if id == cold { // hot is empty: leave cold's job alone from now on
						p.try(fmt.Sprintf("release %d 10 0", id))
						errs <- fmt.Errorf("hot ran out before the single connection was done")
						return
					}
					p.try(fmt.Sprintf("delete %d", id))
				}
			})
		}
		single := dial(t, addr)
		single.try("watch cold")
		single.try("ignore default")
		timedOut := 0
		for range rounds {
			r, err := single.try("reserve-with-timeout 0")
			if err != nil {
				t.Fatal(err)
			}
			id, ok := replyID(r)
			if !ok {
				timedOut++
				continue
			}
			if r, err := single.try(fmt.Sprintf("release %d 10 0", id)); err != nil || r != "RELEASED\r\n" {
				t.Fatalf("release: %q, %v", r, err)
			}
		}
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if timedOut > 0 {
			t.Errorf("%d of %d reserves on a tube with a ready job (and more urgent jobs in another tube others watch) answered TIMED_OUT", timedOut, rounds)
		}
	})

	// Wants every job put by many connections at once,
	// into two tubes, reserved exactly once by many others watching both, none lost.
	t.Run("with puts at once", func(t *testing.T) {
		addr := startServer(t, Config{Backend: newDelayqBackend(t)})
		const producers, consumers, perProducer = 8, 8, 40
		total := producers * perProducer
		var (
			mu   sync.Mutex
			seen = map[string]int{}
			errs []string
			wg   sync.WaitGroup
		)
		fail := func(format string, args ...any) {
			mu.Lock()
			errs = append(errs, fmt.Sprintf(format, args...))
			mu.Unlock()
		}
		done := make(chan struct{})
		for i := range consumers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := dial(t, addr)
				c.send("watch t0", "watch t1", "ignore default")
				for range 3 {
					if _, err := c.tryRead(conversationTimeout); err != nil {
						fail("consumer %d: watch: %v", i, err)
						return
					}
				}
				for {
					select {
					case <-done:
						return
					default:
					}
					c.send("reserve-with-timeout 1")
					r, err := c.tryRead(conversationTimeout)
					if err != nil {
						fail("consumer %d: reserve: %v", i, err)
						return
					}
					if r == "TIMED_OUT\r\n" {
						continue
					}
					var id uint64
					var size int
					if _, err := fmt.Sscanf(r, "RESERVED %d %d", &id, &size); err != nil {
						fail("consumer %d: reserve: %q", i, r)
						return
					}
					body := strings.SplitN(r, "\r\n", 3)[1]
					mu.Lock()
					seen[body]++
					mu.Unlock()
					c.send(fmt.Sprintf("delete %d", id))
					if r, err := c.tryRead(conversationTimeout); err != nil || r != "DELETED\r\n" {
						fail("consumer %d: delete %d: %q, %v", i, id, r, err)
						return
					}
				}
			}()
		}
		var pwg sync.WaitGroup
		for p := range producers {
			pwg.Add(1)
			go func() {
				defer pwg.Done()
				c := dial(t, addr)
				for k := range perProducer {
					c.send(fmt.Sprintf("use t%d", k%2))
					if r, err := c.tryRead(conversationTimeout); err != nil || !strings.HasPrefix(r, "USING") {
						fail("producer %d: use: %q, %v", p, r, err)
						return
					}
					body := fmt.Sprintf("p%d-%d", p, k)
					c.send(fmt.Sprintf("put %d 0 30 %d", k%3, len(body)), body)
					if r, err := c.tryRead(conversationTimeout); err != nil || !strings.HasPrefix(r, "INSERTED") {
						fail("producer %d: put: %q, %v", p, r, err)
						return
					}
				}
			}()
		}
		pwg.Wait()
		deadline := time.Now().Add(30 * time.Second)
		for {
			mu.Lock()
			n := len(seen)
			mu.Unlock()
			if n >= total || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, e := range errs {
			t.Error(e)
		}
		if len(seen) != total {
			t.Errorf("%d distinct jobs reserved; want %d", len(seen), total)
		}
		for body, k := range seen {
			if k != 1 {
				t.Errorf("job %s reserved %d times; want once", body, k)
			}
		}
	})
}
