//go:build faults

package faults_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/faults"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// Scenario 3: kill -9 a producer in the middle of its batches. Every job whose enqueue was
// acknowledged exists and is delivered; the batch in flight left whole jobs or none (each job
// in exactly one set, with its full body), never a half-written one.
func TestKillProducer(t *testing.T) {
	srv := redistest.Standalone(t)
	// Four partitions: a batch is one script call per partition, so a kill can land between them.
	h := newHarness(t, "redis://"+srv.Addr, srv.Client(t), delayq.Config{Partitions: 4})
	prod := h.start("producer", "produce", "-prefix", "b", "-n", "1000000", "-batch", "1000",
		"-concurrency", "4", "-pad", "1000", "-delay", "2s", "-partitions", "4")
	batches := scale(20, 100)
	testwait.For(h.t, time.Minute, "the producer's batches", func() bool { return prod.count(faults.Send) >= batches })
	killAt := h.kill(prod)

	// Before any consumer runs: the layout is whole.
	present, problems := h.scan()
	for _, p := range problems {
		t.Errorf("after the kill: %s", p)
	}
	events := prod.events()
	acked := 0
	for _, e := range events {
		if e.Kind == faults.Enqueued {
			acked++
			if _, ok := present[e.ID]; !ok {
				t.Errorf("job %s was acknowledged but is not in Redis", e.ID)
			}
		}
	}
	storedUnconfirmed := len(present) - acked

	h.start("worker", "work", "-concurrency", "200")
	h.drain(2*time.Minute, 0)
	r := h.check(faults.Rules{Faults: []faults.Window{{Name: "kill producer", Start: killAt, End: killAt}}}, false)
	if r.Duplicates != 0 {
		t.Errorf("%d jobs delivered twice: a producer's death must not duplicate anything", r.Duplicates)
	}
	record(t, figures(r, map[string]any{
		"stored_at_kill": len(present), "stored_but_unconfirmed": storedUnconfirmed,
		"layout_problems": len(problems),
	}))
}

// Scenario 17: HTTP producers send an enqueue again, identical, whenever its answer leaves the
// outcome unknown, while the delayq server's calls to Redis lose their replies: for a second
// every enqueue script call runs in Redis but its reply is lost, go-redis's own repeats too,
// so the server answers 503 for jobs it stored; then, once the producers get through again,
// every connection to Redis is cut and refused for a second. Workers reserve and ack through
// the same proxy meanwhile (enqueue calls alone lose their replies), so many jobs are
// delivered and acked before their producer's repeat gets through. Within the replay window
// each repeat answers the first call's job: no already_exists, no second job, nothing lost,
// no job run twice, and the run_at answered is the one the job was delivered at.
func TestProducersResendThroughLostReplies(t *testing.T) {
	if serverBuildErr != nil {
		t.Fatal(serverBuildErr)
	}
	srv := redistest.Standalone(t)
	proxy := redistest.NewProxy(t, srv.Addr)
	h := newHarness(t, "redis://"+proxy.Addr(), srv.Client(t), delayq.Config{})
	listen := "127.0.0.1:" + freePort(t)
	h.startServer("server", listen)
	n := scale(3000, 30000)
	producer := h.start("producer", "http-produce", "-server", "http://"+listen, "-resend",
		"-prefix", "r", "-n", itoa(n), "-batch", "1", "-concurrency", "32", "-rate", "500",
		"-spread", "1s", "-ttr", "3s", "-backoff", "0")
	worker := h.start("worker", "work", "-concurrency", "50", "-sleep", "10ms")

	var windows []faults.Window
	var dropMs, outageMs int64
	rounds := scale(1, 5)
	for i := range rounds {
		// Each round lands in the middle of the load, spread over it.
		want := (i + 1) * n / (rounds + 1)
		testwait.For(t, time.Minute, fmt.Sprintf("%d jobs enqueued", want), func() bool {
			return producer.count(faults.Enqueued) >= want
		})
		start := time.Now().UnixMilli()
		<-proxy.DropReplies(carriesBodyOf("r"), time.Second)
		end := time.Now().UnixMilli()
		windows = append(windows, faults.Window{Name: "enqueue replies lost", Start: start, End: end})
		dropMs += end - start
		// The repeats get through before the outage, which then cuts other calls in flight.
		after := producer.count(faults.Enqueued)
		testwait.For(t, 30*time.Second, "enqueues to be answered again", func() bool {
			return producer.count(faults.Enqueued) >= after+200
		})
		start = time.Now().UnixMilli()
		<-proxy.Outage(time.Second)
		end = time.Now().UnixMilli()
		windows = append(windows, faults.Window{Name: "connection outage", Start: start, End: end})
		outageMs += end - start
	}
	h.finished(producer, 2*time.Minute)
	h.drain(2*time.Minute, 0)
	r := h.check(faults.Rules{Faults: windows}, false)
	if r.Duplicates > 0 {
		t.Errorf("%d jobs were handed out twice", r.Duplicates)
	}
	if r.Unconfirmed > 0 {
		t.Errorf("%d jobs never got a definite answer", r.Unconfirmed)
	}
	resends := producer.count(faults.Resend)
	if resends == 0 {
		t.Fatal("no enqueue was sent again: the faults hit no call in flight")
	}
	ans := answersOfResends(producer.events(), worker.events())
	t.Logf("resends: %+v", ans)
	if ans.RunAtDiffers > 0 {
		t.Errorf("%d answers gave another run_at than the job was delivered at (e.g. %s)", ans.RunAtDiffers, ans.Example)
	}
	if ans.AfterAck == 0 {
		t.Error("no repeat was sent after its job was acked: the faults did not reach the jobs that ended")
	}
	record(t, figures(r, map[string]any{
		"resends": resends, "unknown_outcomes": producer.count(faults.EnqueueErr),
		"answered_stored_earlier": ans.StoredEarlier, "answered_after_ack": ans.AfterAck,
		"replies_dropped": proxy.Dropped(), "rounds": rounds, "drop_ms": dropMs, "outage_ms": outageMs,
		"connections": proxy.Conns(),
	}))
}

// carriesBodyOf matches a script call that carries the body of one of prefix's jobs: only an
// enqueue sends a job's body to Redis.
func carriesBodyOf(prefix string) func(args []string) bool {
	marker := `{"id":"` + prefix + `-`
	return func(args []string) bool {
		if len(args) < 2 || !strings.EqualFold(args[0], "evalsha") && !strings.EqualFold(args[0], "eval") {
			return false
		}
		for _, a := range args[2:] {
			if strings.Contains(a, marker) {
				return true
			}
		}
		return false
	}
}

// resendAnswers sorts the answers to repeated enqueues.
type resendAnswers struct {
	Answered      int // jobs whose answer came to a repeat
	StoredEarlier int // ... with a job created before that repeat was sent: an earlier send stored it
	AfterAck      int // ... sent after a worker's ack of the job had returned
	RunAtDiffers  int // answers whose run_at is not the one the job's first delivery carried
	Example       string
}

// answersOfResends reads what the producer's repeats were answered against what the worker
// saw: when each job was delivered and acked.
func answersOfResends(produced, worked []faults.Event) resendAnswers {
	runAt := map[string]int64{} // job id: due time at its first delivery
	acked := map[string]int64{} // job id: when its first successful ack returned
	for _, e := range worked {
		switch {
		case e.Kind == faults.Delivered && e.Attempt == 1 && runAt[e.ID] == 0:
			runAt[e.ID] = e.RunAt
		case e.Kind == faults.Acked && acked[e.ID] == 0:
			acked[e.ID] = e.T
		}
	}
	var a resendAnswers
	sent := map[string]int64{} // job id: when its latest repeat was sent
	for _, e := range produced {
		switch e.Kind {
		case faults.Resend:
			sent[e.ID] = e.T
		case faults.Enqueued:
			if at, ok := runAt[e.ID]; ok && at != e.RunAt {
				a.RunAtDiffers++
				a.Example = fmt.Sprintf("%s: answered %d, delivered at %d", e.ID, e.RunAt, at)
			}
			if e.Attempt < 2 {
				continue
			}
			a.Answered++
			if e.Created < sent[e.ID] {
				a.StoredEarlier++
			}
			if at := acked[e.ID]; at != 0 && at < sent[e.ID] {
				a.AfterAck++
			}
		}
	}
	return a
}
