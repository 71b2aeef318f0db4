//go:build faults

package faults_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/faults"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// Scenario 14: every connection between the agents and Redis drops, and new ones are refused
// for 2 s, under load (a proxy between them; Redis itself runs on). Script calls whose replies
// are lost are answered again by their records; acks that fail are retried. Nothing is lost,
// no job goes dead (none may be retried) and no job is handed out twice.
func TestConnectionOutage(t *testing.T) {
	srv := redistest.Standalone(t)
	proxy := redistest.NewProxy(t, srv.Addr)
	h := newHarness(t, "redis://"+proxy.Addr(), srv.Client(t), delayq.Config{})
	n := scale(6000, 60000)
	producer, worker := h.load("o", n, 6, "-max-retries", "0")
	start := time.Now().UnixMilli()
	<-proxy.Outage(2 * time.Second)
	end := time.Now().UnixMilli()
	rec := h.recovery(end, producer, worker)
	h.finished(producer, 2*time.Minute)
	h.drain(2*time.Minute, 0)
	r := h.check(faults.Rules{Faults: []faults.Window{{Name: "connection outage", Start: start, End: end}}}, false)
	if r.Dead > 0 {
		t.Errorf("%d jobs went dead: an attempt was burned by the outage", r.Dead)
	}
	if r.Duplicates > 0 {
		t.Errorf("%d jobs were handed out twice", r.Duplicates)
	}
	record(t, figures(r, map[string]any{
		"outage_ms": end - start, "recovery_ms": rec.Milliseconds(), "dead": r.Dead,
		"connections": proxy.Conns(),
	}))
}

// Scenario 15: HTTP consumers hang up on every third reserve at about the moment the server
// answers it. Jobs the server leased for a client it saw leave go back at once, their attempt
// not counted. A client that closes just after the server wrote the answer cannot be told from
// one that read it (docs/reliability.md): such a job comes back after its TTR (2 s here, retried
// at once) with the attempt counted. The scenario reports how many attempts the hang-ups cost;
// nothing is lost and no job goes dead. (That a hang-up the server sees costs nothing is
// checked deterministically by TestReserveOfAClientThatLeftPutsTheJobBack.)
func TestClientsHangUpDuringReserve(t *testing.T) {
	if serverBuildErr != nil {
		t.Fatal(serverBuildErr)
	}
	srv := redistest.Standalone(t)
	h := newHarness(t, "redis://"+srv.Addr, srv.Client(t), delayq.Config{})
	listen := "127.0.0.1:" + freePort(t)
	server := h.startServer("server", listen)
	n := scale(3000, 30000)
	producer := h.start("producer", "produce", "-prefix", "u", "-n", itoa(n), "-batch", "20",
		"-concurrency", "2", "-rate", itoa(n/6), "-ttr", "2s", "-max-retries", "5", "-backoff", "0")
	consumer := h.start("consumer", "http-work", "-server", "http://"+listen, "-concurrency", "20", "-hangup", "3")
	start := time.Now().UnixMilli()
	h.finished(producer, 2*time.Minute)
	if err := testwait.Until(2*time.Minute, func() error {
		if acked, enqueued := consumer.count(faults.Acked), producer.count(faults.Enqueued); acked < enqueued {
			return fmt.Errorf("%d of %d jobs acked, %d hang-ups", acked, enqueued, consumer.count(faults.HungUp))
		}
		return nil
	}); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		stats, serr := h.c.Stats(ctx, h.topic)
		dead, _, _ := h.c.DeadJobs(ctx, h.topic, 10, "")
		for _, j := range dead {
			h.t.Logf("dead: %s after %d attempts: %s", j.ID, j.Attempts, j.LastError)
		}
		h.t.Fatalf("the consumers did not hand out every job: %v; in Redis %+v (%v)\nconsumer:\n%s\nserver:\n%s",
			err, stats, serr, h.stderr(consumer), h.stderr(server))
	}
	end := time.Now().UnixMilli()
	h.drain(2*time.Minute, 0)
	r := h.check(faults.Rules{Faults: []faults.Window{{Name: "hang-ups", Start: start, End: end}}}, false)
	if r.Dead > 0 {
		t.Errorf("%d jobs went dead: hang-ups burned all their attempts", r.Dead)
	}
	hangUps := consumer.count(faults.HungUp)
	if hangUps == 0 {
		t.Fatal("no consumer hung up: the fault hit nothing")
	}
	burned := 0 // deliveries after a first one: attempts a hang-up cost
	for _, e := range consumer.events() {
		if e.Kind == faults.Delivered && e.Attempt > 1 {
			burned++
		}
	}
	record(t, figures(r, map[string]any{
		"hang_ups": hangUps, "burned_attempts": burned, "dead": r.Dead,
		"handled_in_ms": end - start,
	}))
}
