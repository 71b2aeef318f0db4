package archive

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/redistest"
	"github.com/delayq/delayq/internal/testwait"
)

// BenchmarkEnqueueAck measures the end-to-end rate of jobs enqueued in batches of 100 and run
// by a Worker of 16 handlers that do nothing: with the history off; "recorded": with each ack
// appended to its partition's history stream by the ack's script but no archiver running here
// (the queue's own cost of the history); "on": with an Archiver in this process moving every
// ack into a PostgreSQL on this machine as it goes. Compare the jobs/s in one run:
//
//	go test -run '^$' -bench BenchmarkEnqueueAck -benchtime 20000x -count 5 ./archive/
func BenchmarkEnqueueAck(b *testing.B) {
	for _, mode := range []string{"off", "recorded", "on"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			rdb := redistest.Standalone(b).Client(b)
			c, err := delayq.New(ctx, rdb, delayq.Config{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			pg, _ := openStore(b, Options{KeepBodies: true})
			var a *Archiver
			switch mode {
			case "recorded":
				if err := Enable(ctx, c, int64(b.N)+1, false); err != nil {
					b.Fatal(err)
				}
			case "on":
				a = startBenchArchiver(b, c, pg)
			}
			done := make(chan struct{}, 1024)
			w, _ := delayq.NewWorker(c, delayq.WorkerConfig{Concurrency: 16})
			w.Handle("bench", func(context.Context, *delayq.Job) error { done <- struct{}{}; return nil })
			w.Start(ctx)
			defer w.Stop(ctx)
			body := []byte(`{"order":42,"note":"cancel if unpaid"}`)
			b.ResetTimer()
			go func() {
				for i := 0; i < b.N; i += 100 {
					specs := make([]delayq.Spec, min(100, b.N-i))
					for k := range specs {
						specs[k] = delayq.Spec{Body: body, Format: delayq.FormatJSON}
					}
					if _, err := c.EnqueueBatch(ctx, "bench", specs); err != nil {
						panic(err)
					}
				}
			}()
			for range b.N {
				<-done
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			b.StopTimer()
			if a != nil {
				testwait.For(b, time.Minute, "every ack archived", func() bool { return a.Archived() >= int64(b.N) })
			}
		})
	}
}

// BenchmarkArchiverDrain measures how fast one Archiver moves a backlog of acked jobs'
// outcomes (100-byte bodies) from Redis into PostgreSQL, in rows/s:
//
//	go test -run '^$' -bench BenchmarkArchiverDrain -benchtime 20000x -count 5 ./archive/
func BenchmarkArchiverDrain(b *testing.B) {
	ctx := context.Background()
	rdb := redistest.Standalone(b).Client(b)
	c, err := delayq.New(ctx, rdb, delayq.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	pg, _ := openStore(b, Options{KeepBodies: true})
	if err := Enable(ctx, c, int64(b.N)+1, false); err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 100)
	for i := 0; i < b.N; i += 100 {
		specs := make([]delayq.Spec, min(100, b.N-i))
		for k := range specs {
			specs[k] = delayq.Spec{ID: fmt.Sprintf("j%07d", i+k), Body: body}
		}
		if _, err := c.EnqueueBatch(ctx, "bench", specs); err != nil {
			b.Fatal(err)
		}
		jobs, err := c.Reserve(ctx, "bench", delayq.ReserveOptions{Max: 100})
		if err != nil {
			b.Fatal(err)
		}
		for _, j := range jobs {
			if err := c.Ack(ctx, j.Lease()); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	a := startBenchArchiver(b, c, pg)
	testwait.For(b, 5*time.Minute, "the backlog archived", func() bool { return a.Archived() >= int64(b.N) })
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func startBenchArchiver(b *testing.B, c *delayq.Client, pg *Store) *Archiver {
	a, err := NewArchiver(c, pg, ArchiverConfig{Interval: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = a.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	testwait.For(b, 10*time.Second, "archiving on", func() bool { return a.st.Archive() != 0 })
	return a
}
