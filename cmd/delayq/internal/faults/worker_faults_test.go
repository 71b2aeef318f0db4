//go:build faults

package faults_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/faults"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// itoa is strconv.Itoa, for flag values.
func itoa(n int) string { return strconv.Itoa(n) }

// inFlight returns the leases (by job id) that agent proc held at moment at: delivered to it,
// with no ack sent by then.
func inFlight(events []faults.Event, proc string, at int64) map[string]string {
	sent := map[string]bool{}
	for _, e := range events {
		if e.Proc == proc && e.Kind == faults.AckSent && e.T <= at {
			sent[e.Lease] = true
		}
	}
	out := map[string]string{}
	for _, e := range events {
		if e.Proc == proc && e.Kind == faults.Delivered && e.T <= at && !sent[e.Lease] {
			out[e.ID] = e.Lease
		}
	}
	return out
}

// redelivery returns the earliest lease time of a delivery of id other than lease, or 0.
func redelivery(events []faults.Event, id, lease string) int64 {
	var first int64
	for _, e := range events {
		if e.Kind == faults.Delivered && e.ID == id && e.Lease != lease && (first == 0 || e.Reserved < first) {
			first = e.Reserved
		}
	}
	return first
}

// cancelledIDs returns the jobs whose cancel succeeded.
func cancelledIDs(events []faults.Event) map[string]bool {
	out := map[string]bool{}
	for _, e := range events {
		if e.Kind == faults.Cancelled {
			out[e.ID] = true
		}
	}
	return out
}

// Scenario 1: kill -9 a Worker process mid-job. Its jobs are redelivered within TTR + 1 s of
// the kill; nothing is lost; only the jobs it held are delivered twice.
func TestKillWorker(t *testing.T) {
	srv := redistest.Standalone(t)
	h := newHarness(t, "redis://"+srv.Addr, srv.Client(t), delayq.Config{})
	n := scale(3000, 30000)
	ttr := 2 * time.Second
	prod := h.start("producer", "produce", "-prefix", "k", "-n", itoa(n), "-batch", "50",
		"-rate", itoa(n/5), "-spread", "2s", "-ttr", ttr.String(), "-backoff", "0")
	victim := h.start("victim", "work", "-concurrency", "50", "-sleep", "1s")
	h.start("survivor", "work", "-concurrency", "100", "-sleep", "20ms")
	testwait.For(h.t, 30*time.Second, "the victim to hold 50 jobs", func() bool { return victim.count(faults.Delivered) >= 50 })
	killAt := h.kill(victim)
	h.finished(prod, time.Minute)
	canceller := h.start("canceller", "cancel", "-prefix", "k", "-n", itoa(n), "-every", "7")
	h.finished(canceller, time.Minute)
	h.drain(2*time.Minute, 0)
	r := h.check(faults.Rules{Faults: []faults.Window{{Name: "kill worker", Start: killAt, End: killAt}}}, false)

	events, err := faults.ReadLogs(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	held := inFlight(events, "victim", killAt)
	cancelled := cancelledIDs(events)
	var worst time.Duration
	redelivered := 0
	for id, lease := range held {
		at := redelivery(events, id, lease)
		if at == 0 {
			if !cancelled[id] {
				t.Errorf("job %s, held by the killed worker, was never redelivered", id)
			}
			continue
		}
		redelivered++
		worst = max(worst, time.Duration(at-killAt)*time.Millisecond)
	}
	if len(held) == 0 {
		t.Fatal("the killed worker held no job: the fault hit nothing")
	}
	if worst > ttr+time.Second {
		t.Errorf("a job of the killed worker was redelivered %v after the kill, want within TTR + 1s = %v", worst, ttr+time.Second)
	}
	if r.Duplicates > len(held) {
		t.Errorf("%d jobs delivered twice, but the killed worker held only %d", r.Duplicates, len(held))
	}
	record(t, figures(r, map[string]any{
		"held_by_killed_worker": len(held), "redelivered": redelivered,
		"worst_redelivery_after_kill_ms": worst.Milliseconds(), "ttr_ms": ttr.Milliseconds(),
	}))
}

// Scenario 2: SIGSTOP a consumer past its TTR, then SIGCONT. Its leases expire while it
// sleeps, another consumer gets its jobs, and its late acks are refused: each of those jobs is
// delivered exactly twice and acked once.
func TestStopWorkerPastTTR(t *testing.T) {
	srv := redistest.Standalone(t)
	h := newHarness(t, "redis://"+srv.Addr, srv.Client(t), delayq.Config{})
	n := scale(2000, 20000)
	ttr := time.Second
	prod := h.start("producer", "produce", "-prefix", "s", "-n", itoa(n), "-batch", "50",
		"-rate", itoa(n/4), "-ttr", ttr.String(), "-backoff", "0")
	sleeper := h.start("sleeper", "work", "-concurrency", "20", "-sleep", "300ms")
	testwait.For(h.t, 30*time.Second, "the sleeper to hold 20 jobs", func() bool { return sleeper.count(faults.Delivered) >= 20 })
	stopAt := h.pause(sleeper, true)
	events, err := faults.ReadLogs(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	held := inFlight(events, "sleeper", stopAt)
	if len(held) == 0 {
		t.Fatal("the stopped worker held no job: the fault hit nothing")
	}
	// Another worker takes the expired leases; the sleeper stays stopped until it has them all.
	h.start("taker", "work", "-concurrency", "50")
	testwait.For(h.t, 30*time.Second, "the taker to get every job the sleeper held", func() bool {
		evs, err := faults.ReadLogs(h.dir)
		if err != nil {
			return false
		}
		for id, lease := range held {
			if redelivery(evs, id, lease) == 0 {
				return false
			}
		}
		return true
	})
	contAt := h.pause(sleeper, false)
	h.finished(prod, time.Minute)
	h.drain(time.Minute, 0)
	r := h.check(faults.Rules{Faults: []faults.Window{{Name: "SIGSTOP", Start: stopAt, End: contAt}}}, false)

	events, err = faults.ReadLogs(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for id, lease := range held {
		deliveries, acks := 0, 0
		lateAck := faults.Kind("")
		for _, e := range events {
			switch {
			case e.ID != id:
			case e.Kind == faults.Delivered:
				deliveries++
			case e.Kind == faults.Acked:
				acks++
			}
			if e.ID == id && e.Lease == lease && (e.Kind == faults.Acked || e.Kind == faults.AckRefused || e.Kind == faults.AckErr) {
				lateAck = e.Kind
			}
		}
		if lateAck == faults.AckRefused {
			refused++
		} else {
			t.Errorf("job %s: the stopped worker's late ack ended %q, want %q", id, lateAck, faults.AckRefused)
		}
		if deliveries != 2 || acks != 1 {
			t.Errorf("job %s: %d deliveries and %d successful acks, want 2 and 1", id, deliveries, acks)
		}
	}
	record(t, figures(r, map[string]any{
		"held_by_stopped_worker": len(held), "late_acks_refused": refused,
		"stopped_ms": contAt - stopAt, "ttr_ms": ttr.Milliseconds(),
	}))
}

// Scenario 11: four Worker processes compete for one topic: no job is delivered twice, none
// is lost.
func TestCompetingWorkers(t *testing.T) {
	srv := redistest.Standalone(t)
	h := newHarness(t, "redis://"+srv.Addr, srv.Client(t), delayq.Config{})
	n := scale(20000, 100000)
	prod := h.start("producer", "produce", "-prefix", "c", "-n", itoa(n), "-batch", "500",
		"-concurrency", "2", "-spread", "3s")
	for i := range 4 {
		h.start("worker"+itoa(i), "work", "-concurrency", "50")
	}
	start := time.Now()
	h.finished(prod, 5*time.Minute)
	h.drain(5*time.Minute, 0)
	took := time.Since(start)
	r := h.check(faults.Rules{}, false)
	if r.Delivered != n || r.Duplicates != 0 {
		t.Errorf("%d of %d jobs delivered, %d twice", r.Delivered, n, r.Duplicates)
	}
	record(t, figures(r, map[string]any{"workers": 4, "jobs": n, "seconds": took.Seconds()}))
}
