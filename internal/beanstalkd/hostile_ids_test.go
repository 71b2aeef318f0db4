package beanstalkd

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/delayq/delayq"
)

// TestHostileConcurrentPutsGetUniqueIncreasingIDs: puts from many connections at once, to
// tubes of valid and of hashed topic names, get ids that are unique and, on each connection,
// increasing; stats-tube and stats count every put once.
func TestHostileConcurrentPutsGetUniqueIncreasingIDs(t *testing.T) {
	addr := startServer(t, Config{Backend: newDelayqBackend(t)})
	const conns, puts = 16, 40
	tubes := []string{"ids-a", "ids-b", "ids+c", "_ids-d"}
	peers := make([]rawPeer, conns)
	for i := range peers {
		peers[i] = dialRaw(t, addr)
	}
	got := make([][]uint64, conns)
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Go(func() {
			tube := tubes[i%len(tubes)]
			if r, err := p.do("use " + tube); err != nil || r != "USING "+tube+"\r\n" {
				errs <- fmt.Errorf("use %s: %q, %v", tube, r, err)
				return
			}
			for k := range puts {
				r, err := p.do("put 1 0 60 1", "x")
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
	c := dialPeer(t, addr)
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
}

// TestHostileFailedPutCountsNoJob: a put the delayq Client refuses (its body is over the
// Client's MaxBody, though under the server's max-job-size) is answered JOB_TOO_BIG, its id
// names nothing, the next put gets a later id, and neither stats-tube's nor stats' total-jobs
// counts it: beanstalkd counts the jobs it made.
func TestHostileFailedPutCountsNoJob(t *testing.T) {
	addr := startServer(t, Config{Backend: newDelayqBackendWith(t, delayq.Config{Limits: delayq.Limits{MaxBody: 8}})})
	c := dialPeer(t, addr)
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
}

// TestHostileTwoServersIssueUniqueIDs: two servers on one Redis, taking puts at once, never
// issue one id twice, and each connection's ids increase.
func TestHostileTwoServersIssueUniqueIDs(t *testing.T) {
	newBackend := sharedBackends(t)
	addrs := []string{startServer(t, Config{Backend: newBackend()}), startServer(t, Config{Backend: newBackend()})}
	const conns, puts = 8, 50
	peers := make([]rawPeer, conns)
	for i := range peers {
		peers[i] = dialRaw(t, addrs[i%2])
	}
	got := make([][]uint64, conns)
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Go(func() {
			for range puts {
				r, _ := p.do("put 0 0 60 1", "x")
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
}
