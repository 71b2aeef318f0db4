package delayq

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/redistest"
)

var body100 = bytes.Repeat([]byte("x"), 100)

func newBenchClient(b *testing.B) (*Client, redis.UniversalClient) {
	b.Helper()
	rdb := redistest.Standalone(b).Client(b)
	return newClientOn(b, rdb, Config{}), rdb
}

// BenchmarkEnqueue runs 16 producers (8 per core on 2 cores) calling Enqueue one job at a time.
func BenchmarkEnqueue(b *testing.B) {
	c, _ := newBenchClient(b)
	ctx := context.Background()
	b.SetParallelism(16 / max(1, runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Enqueue(ctx, "bench", Spec{Body: body100, Delay: time.Hour}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkEnqueueNamedJobs is BenchmarkEnqueue with ids of the caller's: each job's
// fingerprint is computed and stored, and its ended marker looked for.
func BenchmarkEnqueueNamedJobs(b *testing.B) {
	c, _ := newBenchClient(b)
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(16 / max(1, runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := "order-" + strconv.FormatInt(next.Add(1), 10)
			if _, err := c.Enqueue(ctx, "bench", Spec{ID: id, Body: body100, Delay: time.Hour}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkEnqueueOneProducer is one producer calling Enqueue one job at a time: each call has
// nobody to share a round trip with.
func BenchmarkEnqueueOneProducer(b *testing.B) {
	c, _ := newBenchClient(b)
	ctx := context.Background()
	mustEnqueue(b, c, "bench", Spec{Body: body100, Delay: time.Hour}) // the topic exists
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := c.Enqueue(ctx, "bench", Spec{Body: body100, Delay: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

func BenchmarkEnqueueBatch(b *testing.B) {
	c, _ := newBenchClient(b)
	ctx := context.Background()
	specs := make([]Spec, 100)
	for i := range specs {
		specs[i] = Spec{Body: body100, Delay: time.Hour}
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.EnqueueBatch(ctx, "bench", specs); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N*len(specs))/b.Elapsed().Seconds(), "jobs/s")
}

func BenchmarkReserveAck(b *testing.B) { benchmarkReserveAck(b, false) }

// BenchmarkReserveAckNamedJobs is BenchmarkReserveAck with jobs enqueued with ids of the
// caller's: each record carries a fingerprint, and each ack leaves an ended marker.
func BenchmarkReserveAckNamedJobs(b *testing.B) { benchmarkReserveAck(b, true) }

func benchmarkReserveAck(b *testing.B, named bool) {
	c, _ := newBenchClient(b)
	ctx := context.Background()
	specs := make([]Spec, 1000)
	for i := 0; i < b.N; i += len(specs) {
		for k := range specs {
			specs[k] = Spec{Body: body100}
			if named {
				specs[k].ID = fmt.Sprintf("order-%d", i+k)
			}
		}
		if _, err := c.EnqueueBatch(ctx, "bench", specs); err != nil {
			b.Fatal(err)
		}
	}
	var left atomic.Int64
	left.Store(int64(b.N))
	b.SetParallelism(16 / max(1, runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if left.Add(-1) < 0 {
				continue
			}
			jobs, err := c.Reserve(ctx, "bench", ReserveOptions{Wait: time.Second})
			if err != nil || len(jobs) != 1 {
				b.Errorf("Reserve: %d jobs, %v", len(jobs), err)
				return
			}
			if err := c.Ack(ctx, Lease{Topic: "bench", ID: jobs[0].ID, Token: jobs[0].LeaseToken}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkMemoryPerJob reports the Redis memory one pending job with a 100-byte body and a
// generated id costs, as used_memory's growth over 100,000 jobs due over the next hours divided
// by their number: enqueued in batches of 1000, by one producer one job at a time (each call
// alone), and by 16 producers one job at a time (their calls coalesced).
func BenchmarkMemoryPerJob(b *testing.B) {
	const n = 100_000
	fill := map[string]func(context.Context, *Client) error{
		"batches": func(ctx context.Context, c *Client) error {
			specs := make([]Spec, 1000)
			for i := 0; i < n; i += len(specs) {
				for k := range specs {
					specs[k] = Spec{Body: body100, Delay: time.Duration(k+1) * time.Minute}
				}
				if _, err := c.EnqueueBatch(ctx, "mem", specs); err != nil {
					return err
				}
			}
			return nil
		},
		"1 producer": func(ctx context.Context, c *Client) error { return produceEach(ctx, c, n, 1) },
		"16 producers": func(ctx context.Context, c *Client) error {
			return produceEach(ctx, c, n, 16)
		},
	}
	for _, name := range []string{"batches", "1 producer", "16 producers"} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				c, rdb := newBenchClient(b)
				ctx := context.Background()
				mustEnqueue(b, c, "mem", Spec{Body: body100, Delay: time.Hour}) // the topic exists
				before := usedMemory(b, rdb)
				if err := fill[name](ctx, c); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(usedMemory(b, rdb)-before)/n, "bytes/job")
			}
		})
	}
}

// produceEach enqueues n jobs one at a time from the given number of producers, due over the
// next hours.
func produceEach(ctx context.Context, c *Client, n, producers int) error {
	var next atomic.Int64
	errs := make(chan error, producers)
	for range producers {
		go func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				if _, err := c.Enqueue(ctx, "mem", Spec{Body: body100, Delay: time.Duration(i%1000+1) * time.Minute}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range producers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// usedMemory returns the server's used_memory.
func usedMemory(b *testing.B, rdb redis.UniversalClient) int64 {
	return infoField(b, rdb, "memory", "used_memory")
}

// BenchmarkWorkerDrain measures how fast a Worker with 16 handler slots drains a backlog of due
// jobs whose handler does nothing.
func BenchmarkWorkerDrain(b *testing.B) {
	c, _ := newBenchClient(b)
	ctx := context.Background()
	specs := make([]Spec, 1000)
	for i := range specs {
		specs[i] = Spec{Body: body100}
	}
	for i := 0; i < b.N; i += len(specs) {
		if _, err := c.EnqueueBatch(ctx, "drain", specs[:min(len(specs), b.N-i)]); err != nil {
			b.Fatal(err)
		}
	}
	var handled atomic.Int64
	done := make(chan struct{})
	w, err := NewWorker(c, WorkerConfig{Concurrency: 16})
	if err != nil {
		b.Fatal(err)
	}
	w.Handle("drain", func(ctx context.Context, j *Job) error {
		if handled.Add(1) == int64(b.N) {
			close(done)
		}
		return nil
	})
	b.ResetTimer()
	w.Start(ctx)
	<-done
	b.StopTimer()
	w.Stop(ctx)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
