package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
)

// Delayq is the delayq Contestant: a delayq.Client per opened topic, consumed by a
// delayq.Worker.
type Delayq struct {
	// RDB is the Redis the client talks to.
	RDB redis.UniversalClient
	// Config configures each delayq.Client; its Logger defaults to one that drops warnings
	// about the benchmark server's missing persistence.
	Config delayq.Config
	// Revision is reported as the version, such as a commit hash.
	Revision string
}

// Name returns "delayq".
func (d *Delayq) Name() string { return "delayq" }

// Version returns d.Revision, or "dev".
func (d *Delayq) Version() string {
	if d.Revision == "" {
		return "dev"
	}
	return d.Revision
}

// Open returns a queue on a new delayq.Client.
func (d *Delayq) Open(ctx context.Context, topic string) (Queue, error) {
	cfg := d.Config
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := delayq.New(ctx, d.RDB, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: delayq client: %w", err)
	}
	maxBatch := cfg.Limits.MaxBatch
	if maxBatch == 0 {
		maxBatch = 1000
	}
	return &delayqQueue{c: c, topic: topic, maxBatch: maxBatch}, nil
}

// Client returns the delayq.Client behind a Queue opened by Delayq, or nil for another Queue.
func Client(q Queue) *delayq.Client {
	if dq, ok := q.(*delayqQueue); ok {
		return dq.c
	}
	return nil
}

type delayqQueue struct {
	c        *delayq.Client
	topic    string
	maxBatch int
	rec      recorder
	worker   *delayq.Worker
}

func (q *delayqQueue) MaxBatch() int { return q.maxBatch }

func (q *delayqQueue) Produce(ctx context.Context, p Plan) (Produced, error) {
	return produce(ctx, p, q.maxBatch, func(ctx context.Context, from, to int) error {
		specs := make([]delayq.Spec, 0, to-from)
		for i := from; i < to; i++ {
			s := delayq.Spec{Body: Body(i), Delay: p.Delay}
			if !p.At.IsZero() {
				s = delayq.Spec{Body: Body(i), RunAt: p.DueAt(i)}
			}
			specs = append(specs, s)
		}
		if len(specs) == 1 {
			_, err := q.c.Enqueue(ctx, q.topic, specs[0])
			return err
		}
		res, err := q.c.EnqueueBatch(ctx, q.topic, specs)
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.Err != nil {
				return r.Err
			}
		}
		return nil
	})
}

func (q *delayqQueue) Consume(ctx context.Context, concurrency int) error {
	w, err := delayq.NewWorker(q.c, delayq.WorkerConfig{Concurrency: concurrency})
	if err != nil {
		return err
	}
	err = w.Handle(q.topic, func(_ context.Context, job *delayq.Job) error {
		received := time.Now()
		i, err := BodyIndex(job.Body)
		if err != nil {
			return delayq.DeadLetter(err)
		}
		q.rec.add(Delivery{Index: i, Received: received, Reserved: job.LeaseDeadline.Add(-job.TTR)})
		return nil
	})
	if err != nil {
		return err
	}
	q.worker = w
	return w.Start(ctx)
}

func (q *delayqQueue) Await(ctx context.Context, n int) (Awaited, error) {
	return q.rec.await(ctx, n, func(ctx context.Context) (bool, error) {
		s, err := q.c.Stats(ctx, q.topic)
		if err != nil {
			return false, err
		}
		return s.Delayed+s.Ready+s.Reserved == 0, nil
	})
}

func (q *delayqQueue) StopConsuming(ctx context.Context) error {
	if q.worker == nil {
		return nil
	}
	w := q.worker
	q.worker = nil
	return w.Stop(ctx)
}

func (q *delayqQueue) Close(ctx context.Context) error {
	return errors.Join(q.StopConsuming(ctx), q.c.Close())
}

// produce runs p over producer goroutines that take chunks of at most min(p.Batch, maxBatch)
// consecutive jobs and hand each chunk [from, to) to enqueue.
func produce(ctx context.Context, p Plan, maxBatch int, enqueue func(ctx context.Context, from, to int) error) (Produced, error) {
	p = p.withDefaults()
	batch := min(p.Batch, maxBatch)
	var next, stored atomic.Int64
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	out := Produced{Start: time.Now()}
	for range p.Producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				from := int(next.Add(int64(batch))) - batch
				if from >= p.N || ctx.Err() != nil {
					return
				}
				to := min(from+batch, p.N)
				if err := enqueue(ctx, from, to); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("enqueue jobs %d to %d: %w", from, to-1, err)
					}
					mu.Unlock()
					cancel()
					return
				}
				stored.Add(int64(to - from))
			}
		}()
	}
	wg.Wait()
	out.End = time.Now()
	out.Stored = int(stored.Load())
	err := firstErr
	return out, err
}

// recorder collects the deliveries of a queue's handlers.
type recorder struct {
	mu         sync.Mutex
	deliveries []Delivery
}

func (r *recorder) add(d Delivery) {
	r.mu.Lock()
	r.deliveries = append(r.deliveries, d)
	r.mu.Unlock()
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.deliveries)
}

// await polls until n deliveries are recorded and finished reports true, then takes the
// deliveries recorded so far.
func (r *recorder) await(ctx context.Context, n int, finished func(ctx context.Context) (bool, error)) (Awaited, error) {
	if err := poll(ctx, time.Millisecond, func() (bool, error) { return r.count() >= n, nil }); err != nil {
		return Awaited{}, fmt.Errorf("waiting for %d deliveries, got %d: %w", n, r.count(), err)
	}
	if err := poll(ctx, time.Millisecond, func() (bool, error) { return finished(ctx) }); err != nil {
		return Awaited{}, fmt.Errorf("waiting for the last acks: %w", err)
	}
	done := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := Awaited{Deliveries: r.deliveries, Done: done}
	r.deliveries = nil
	return out, nil
}

// poll calls cond every interval until it reports true, fails, or ctx ends.
func poll(ctx context.Context, interval time.Duration, cond func() (bool, error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Recorder collects deliveries for a Queue implementation outside this package.
type Recorder struct{ r recorder }

// Add records one delivery; it is safe for concurrent use.
func (r *Recorder) Add(d Delivery) { r.r.add(d) }

// Await waits until n deliveries are recorded and finished reports true, then returns and
// forgets the deliveries recorded so far.
func (r *Recorder) Await(ctx context.Context, n int, finished func(ctx context.Context) (bool, error)) (Awaited, error) {
	return r.r.await(ctx, n, finished)
}

// Produce runs p for a Queue implementation outside this package: producer goroutines take
// chunks of at most min(p.Batch, maxBatch) consecutive job indexes and hand each chunk
// [from, to) to enqueue.
func Produce(ctx context.Context, p Plan, maxBatch int, enqueue func(ctx context.Context, from, to int) error) (Produced, error) {
	return produce(ctx, p, maxBatch, enqueue)
}
