//go:build faults

package archive

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/pgtest"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// PostgreSQL stopped for 30 s while producers and a Worker run at a steady rate: every job
// acked before, during and after the outage is archived once, and none is dropped.
//
//	go test -tags faults -run TestFaultPostgresDownUnderLoad -v ./archive/
func TestFaultPostgresDownUnderLoad(t *testing.T) {
	const outage, rate = 30 * time.Second, 200 // jobs per second
	ctx := context.Background()
	pgsrv := pgtest.Start(t)
	pg, err := Open(ctx, pgsrv.NewDatabase(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Close)
	rdb := redistest.Standalone(t).Client(t)
	c, err := delayq.New(ctx, rdb, delayq.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	a := runArchiver(t, c, pg, ArchiverConfig{Interval: 100 * time.Millisecond})

	var acked atomic.Int64
	w, _ := delayq.NewWorker(c, delayq.WorkerConfig{Concurrency: 8})
	w.Handle("load", func(context.Context, *delayq.Job) error { acked.Add(1); return nil })
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	produce := func(d time.Duration, phase string) int {
		n := 0
		tick := time.NewTicker(time.Second / rate)
		defer tick.Stop()
		for end := time.Now().Add(d); time.Now().Before(end); n++ {
			<-tick.C
			if _, err := c.Enqueue(ctx, "load", delayq.Spec{ID: fmt.Sprintf("%s-%06d", phase, n)}); err != nil {
				t.Fatal(err)
			}
		}
		return n
	}
	total := produce(5*time.Second, "before")
	pgsrv.Stop(t)
	total += produce(outage, "during")
	b, err := a.Backlog(ctx)
	t.Logf("PostgreSQL down %v: %d outcomes waiting in Redis, %d dropped", outage, b.Waiting, b.Dropped)
	if err != nil || b.Dropped != 0 {
		t.Fatalf("backlog %+v, %v", b, err)
	}
	pgsrv.Start(t)
	total += produce(5*time.Second, "after")
	testwait.For(t, 30*time.Second, "every job handled", func() bool { return int(acked.Load()) >= total })
	w.Stop(ctx)
	start := time.Now()
	rows := waitRows(t, pg, "load", total)
	t.Logf("%d outcomes archived once each; the last %v after the producers stopped", len(rows), time.Since(start))
	for i := 1; i < len(rows); i++ {
		if rows[i].ID == rows[i-1].ID {
			t.Fatalf("%s archived twice", rows[i].ID)
		}
	}
}
