//go:build faults

package faults_test

import (
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
