package beanstalkd

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/testwait"
)

// putJobs puts n jobs in tube, job i with priority pri(i), and returns each id's priority.
func putJobs(t *testing.T, addr, tube string, n int, pri func(i int) int) map[uint64]int {
	t.Helper()
	c := dialPeer(t, addr)
	c.do("use " + tube)
	out := map[uint64]int{}
	for i := range n {
		id, ok := replyID(c.do(fmt.Sprintf("put %d 0 120 1", pri(i)), "x"))
		if !ok {
			t.Fatalf("put %d failed", i)
		}
		out[id] = pri(i)
	}
	return out
}

// drainConcurrently has conns connections, watching tubes, reserve-with-timeout 0 and delete
// until TIMED_OUT, and returns the ids each reserved, in order.
func drainConcurrently(t *testing.T, addr string, conns int, tubes []string) [][]uint64 {
	t.Helper()
	peers := make([]rawPeer, conns)
	for i := range peers {
		peers[i] = dialRaw(t, addr)
	}
	got := make([][]uint64, conns)
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Go(func() {
			for _, tube := range tubes {
				if _, err := p.do("watch " + tube); err != nil {
					errs <- err
					return
				}
			}
			for {
				r, err := p.do("reserve-with-timeout 0")
				if err != nil {
					errs <- err
					return
				}
				if r == "TIMED_OUT\r\n" {
					return
				}
				id, ok := replyID(r)
				if !ok {
					errs <- fmt.Errorf("connection %d: reserve: %q", i, r)
					return
				}
				got[i] = append(got[i], id)
				if r, err := p.do(fmt.Sprintf("delete %d", id)); err != nil || r != "DELETED\r\n" {
					errs <- fmt.Errorf("connection %d: delete %d: %q, %v", i, id, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return got
}

// checkDrained wants every job of pris reserved exactly once, and each connection's jobs in
// priority, then id order (every job was put before the first reserve, so a job taken later
// was passed over before).
func checkDrained(t *testing.T, pris map[uint64]int, got [][]uint64) {
	t.Helper()
	seen := map[uint64]int{}
	for i, ids := range got {
		for k, id := range ids {
			if j, dup := seen[id]; dup {
				t.Errorf("job %d reserved by connections %d and %d", id, j, i)
			}
			seen[id] = i
			if _, ok := pris[id]; !ok {
				t.Errorf("connection %d reserved job %d, never put", i, id)
			}
			if k > 0 {
				a, b := ids[k-1], id
				if pris[a] > pris[b] || pris[a] == pris[b] && a > b {
					t.Errorf("connection %d reserved job %d (pri %d) after job %d (pri %d)", i, b, pris[b], a, pris[a])
				}
			}
		}
	}
	for id := range pris {
		if _, ok := seen[id]; !ok {
			t.Errorf("job %d was never reserved", id)
		}
	}
}

// TestHostileConcurrentReservesHandEachJobOnce: connections that reserve without a wait at
// once (one library Reserve serves them) each get a different job, none is skipped, and each
// connection's jobs come in priority, then id order.
func TestHostileConcurrentReservesHandEachJobOnce(t *testing.T) {
	for _, parts := range []int{1, 8} {
		t.Run(fmt.Sprintf("partitions=%d", parts), func(t *testing.T) {
			addr := startServer(t, Config{Backend: newDelayqBackendWith(t, delayq.Config{Partitions: parts})})
			pris := putJobs(t, addr, "once", 300, func(i int) int { return (i * 7) % 5 })
			checkDrained(t, pris, drainConcurrently(t, addr, 12, []string{"once"}))
		})
	}
}

// TestHostileConcurrentReservesOverSmallMaxReserve: a Client whose Limits.MaxReserve is below
// the reserves waiting at once still serves each of them.
func TestHostileConcurrentReservesOverSmallMaxReserve(t *testing.T) {
	addr := startServer(t, Config{Backend: newDelayqBackendWith(t, delayq.Config{Limits: delayq.Limits{MaxReserve: 2}})})
	pris := putJobs(t, addr, "small", 300, func(i int) int { return i % 3 })
	checkDrained(t, pris, drainConcurrently(t, addr, 16, []string{"small"}))
}

// TestHostileReservesOverSeveralTubesNeverTimeOutOnAReadyJob: connections watching two tubes
// take the more urgent tube's jobs (and, for a moment, the other's one job, which they give
// back); meanwhile a connection watching only the other tube, reserving and releasing its one
// job, never hears TIMED_OUT: the job is ready all along, as in beanstalkd.
func TestHostileReservesOverSeveralTubesNeverTimeOutOnAReadyJob(t *testing.T) {
	addr := startServer(t, Config{Backend: newDelayqBackend(t)})
	const urgent, rounds = 3000, 300
	putJobs(t, addr, "hot", urgent, func(int) int { return 0 })
	var cold uint64
	for id := range putJobs(t, addr, "cold", 1, func(int) int { return 10 }) {
		cold = id
	}
	multi := make([]rawPeer, 8)
	for i := range multi {
		multi[i] = dialRaw(t, addr)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, len(multi)+1)
	for _, p := range multi {
		wg.Go(func() {
			p.do("watch hot")
			p.do("watch cold")
			p.do("ignore default")
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := p.do("reserve-with-timeout 0")
				id, ok := replyID(r)
				if err != nil || !ok {
					return // hot is empty, or cold's job is with the single connection
				}
				if id == cold { // hot is empty: leave cold's job alone from now on
					p.do(fmt.Sprintf("release %d 10 0", id))
					errs <- fmt.Errorf("hot ran out before the single connection was done")
					return
				}
				p.do(fmt.Sprintf("delete %d", id))
			}
		})
	}
	single := dialRaw(t, addr)
	single.do("watch cold")
	single.do("ignore default")
	timedOut := 0
	for range rounds {
		r, err := single.do("reserve-with-timeout 0")
		if err != nil {
			t.Fatal(err)
		}
		id, ok := replyID(r)
		if !ok {
			timedOut++
			continue
		}
		if r, err := single.do(fmt.Sprintf("release %d 10 0", id)); err != nil || r != "RELEASED\r\n" {
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
}

// TestHostileHangupsStrandNoJob: connections that reserve and hang up, some right after the
// command and some while waiting when jobs arrive, leave no job reserved: every job is ready
// again at once, not after its TTR.
func TestHostileHangupsStrandNoJob(t *testing.T) {
	addr := startServer(t, Config{Backend: newDelayqBackend(t)})
	const jobs = 40
	// Waiters first, on an empty tube.
	var waiters []rawPeer
	for range 20 {
		p := dialRaw(t, addr)
		p.p.send("watch hang", "reserve-with-timeout 5")
		waiters = append(waiters, p)
	}
	c := dialPeer(t, addr)
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
		p := dialRaw(t, addr)
		wg.Go(func() {
			_ = p.p.nc.SetWriteDeadline(time.Now().Add(conversationTimeout))
			_, _ = p.p.nc.Write([]byte("watch hang\r\nreserve-with-timeout 0\r\n"))
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
}

// TestHostileGivenBackJobIsNotReserved: a reserve over two tubes takes the more urgent job;
// the other tube's job, taken and given back, was not reserved (stats-job reserves 0), and
// the tubes' stats are as beanstalkd's.
func TestHostileGivenBackJobIsNotReserved(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		c := dialPeer(t, addr)
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
}

// TestHostileDeadlineSoonWithAReadyJob: a connection whose reserved job's deadline is soon
// still reserves a ready job; with none, DEADLINE_SOON, as beanstalkd.
func TestHostileDeadlineSoonWithAReadyJob(t *testing.T) {
	differ(t, func(t *testing.T, addr string) string {
		c := dialPeer(t, addr)
		var tr transcript
		tr.add("put", c.do("put 0 0 2 1", "a"))
		tr.add("put", c.do("put 0 0 2 1", "b"))
		tr.add("reserve", c.do("reserve"))
		tr.add("reserve-with-timeout 5", c.do("reserve-with-timeout 5")) // b: ready
		tr.add("reserve-with-timeout 5", c.do("reserve-with-timeout 5")) // DEADLINE_SOON in about 1 s
		tr.add("reserve-with-timeout 0", c.do("reserve-with-timeout 0"))
		return tr.String()
	})
}

// TestHostileHangupsOverSeveralTubesStrandNoJob: connections waiting on two tubes hang up
// while jobs arrive in both at once; no job stays reserved.
func TestHostileHangupsOverSeveralTubesStrandNoJob(t *testing.T) {
	addr := startServer(t, Config{Backend: newDelayqBackend(t)})
	const jobs = 30
	var waiters []rawPeer
	for range 20 {
		p := dialRaw(t, addr)
		p.p.send("watch h1", "watch h2", "reserve-with-timeout 5")
		waiters = append(waiters, p)
	}
	c1, c2 := dialPeer(t, addr), dialPeer(t, addr)
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
}

// TestHostileIndexAfterConcurrentPuts: every id issued to concurrent puts names its job: peek
// shows its body, stats-job its tube (a hashed topic's too).
func TestHostileIndexAfterConcurrentPuts(t *testing.T) {
	addr := startServer(t, Config{Backend: newDelayqBackend(t)})
	tubes := []string{"ix-a", "ix+b"}
	peers := []rawPeer{dialRaw(t, addr), dialRaw(t, addr), dialRaw(t, addr), dialRaw(t, addr)}
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
			p.do("use " + tube)
			for k := range 50 {
				body := fmt.Sprintf("%d-%02d", i, k)
				r, _ := p.do(fmt.Sprintf("put 0 0 60 %d", len(body)), body)
				if id, ok := replyID(r); ok {
					got[i] = append(got[i], put{id, tube, body})
				}
			}
		})
	}
	wg.Wait()
	c := dialPeer(t, addr)
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
}
