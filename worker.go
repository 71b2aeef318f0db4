package delayq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/store"
)

// Handler processes one job. Returning nil acks it; an error nacks it, to be retried after its
// backoff step (see RetryIn and DeadLetter to choose otherwise). ctx ends when the Worker is
// stopped by force or when the job's lease is lost.
type Handler func(ctx context.Context, job *Job) error

// RetryIn returns an error that makes a Handler's job due again after d instead of its backoff step.
func RetryIn(d time.Duration, err error) error { return &handlerError{err: err, delay: &d} }

// DeadLetter returns an error that sends a Handler's job to the dead letters at once.
func DeadLetter(err error) error { return &handlerError{err: err, dead: true} }

type handlerError struct {
	err   error
	delay *time.Duration
	dead  bool
}

func (e *handlerError) Error() string { return fmt.Sprint(e.err) }
func (e *handlerError) Unwrap() error { return e.err }

// WorkerConfig configures a Worker. Zero fields take the defaults.
type WorkerConfig struct {
	// Concurrency is how many handlers run at once over all topics. A Worker never leases more
	// jobs than it has free handler slots, so no job waits in its memory. Defaults to 10.
	Concurrency int
	// Push makes the Worker take the jobs that carry a CallbackURL (which pull consumers never
	// see) instead of the others: a webhook dispatcher is a push Worker.
	Push bool
	// Logger receives handler failures. Defaults to the Client's.
	Logger *slog.Logger
}

// Worker runs handlers for the due jobs of its topics.
type Worker struct {
	c     *Client
	cfg   WorkerConfig
	log   *slog.Logger
	slots chan struct{} // a token per free handler slot

	mu       sync.Mutex
	handlers map[string]Handler
	started  bool
	running  map[*Job]context.CancelFunc
	fetchCtx context.Context

	fetchCancel context.CancelFunc
	fetchers    sync.WaitGroup
	jobs        sync.WaitGroup

	// Finished jobs are acked by the next reserve call of a fetcher, which carries the acks of
	// its partition along: a busy Worker makes one round trip per batch of jobs, not one per
	// batch plus one per ack. With no fetcher active (all wait for due jobs), handlers ack
	// their jobs themselves at once.
	ackMu  sync.Mutex
	acks   []ackReq
	active int // fetchers that are not waiting for due jobs
}

// NewWorker returns a Worker that leases jobs through c.
func NewWorker(c *Client, cfg WorkerConfig) (*Worker, error) {
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 10
	}
	if cfg.Concurrency < 1 || cfg.Concurrency > 100000 {
		return nil, invalid("concurrency", "%d is outside 1 to 100000", cfg.Concurrency)
	}
	if cfg.Logger == nil {
		cfg.Logger = c.log
	}
	w := &Worker{
		c:        c,
		cfg:      cfg,
		log:      cfg.Logger,
		slots:    make(chan struct{}, cfg.Concurrency),
		handlers: map[string]Handler{},
		running:  map[*Job]context.CancelFunc{},
	}
	for range cfg.Concurrency {
		w.slots <- struct{}{}
	}
	return w, nil
}

// Handle registers h for topic. Called after Start, it starts fetching the topic at once; a
// topic has one handler, and registering it again is an error.
func (w *Worker) Handle(ctx context.Context, topic string, h Handler) error {
	if err := ValidateTopic(topic); err != nil {
		return err
	}
	if h == nil {
		return invalid("handler", "must not be nil")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.handlers[topic]; ok {
		return fmt.Errorf("delayq: topic %q has a handler already", topic)
	}
	if w.started {
		if w.fetchCancel == nil {
			return ErrClosed
		}
		if err := w.startFetch(ctx, topic, h); err != nil {
			return err
		}
	}
	w.handlers[topic] = h
	return nil
}

// Start begins fetching and running jobs of every registered topic and returns at once.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return errors.New("delayq: Worker already started")
	}
	w.fetchCtx, w.fetchCancel = context.WithCancel(context.WithoutCancel(ctx))
	for topic, h := range w.handlers {
		if err := w.startFetch(ctx, topic, h); err != nil {
			w.fetchCancel()
			return err
		}
	}
	w.started = true
	return nil
}

// startFetch starts the fetch loop of one topic; w.mu is held.
func (w *Worker) startFetch(ctx context.Context, topic string, h Handler) error {
	t, lane, err := w.c.consumerState(ctx, topic, w.cfg.Push)
	if err != nil {
		return err
	}
	w.fetchers.Add(1)
	w.resume()
	go w.fetch(w.fetchCtx, t, lane, h)
	return nil
}

// Stop stops fetching, waits for running handlers to finish until ctx ends, and then cancels the
// remaining handlers and releases their leases, so that their jobs are due again at once instead
// of after their TTR. It returns ctx's error when handlers had to be cut short.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	if w.fetchCancel == nil {
		w.mu.Unlock()
		return nil
	}
	w.fetchCancel()
	w.fetchCancel = nil
	w.mu.Unlock()
	w.fetchers.Wait()

	done := make(chan struct{})
	go func() { w.jobs.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	w.mu.Lock()
	cut := make([]*Job, 0, len(w.running))
	for job, cancel := range w.running {
		cancel()
		cut = append(cut, job)
		delete(w.running, job)
	}
	w.mu.Unlock()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, job := range cut {
		if err := w.c.Release(rctx, job.Topic, job.ID, job.Lease); err != nil && !errors.Is(err, ErrLeaseLost) {
			w.log.Error("delayq: releasing a job at shutdown", "topic", job.Topic, "id", job.ID, "err", err)
		}
	}
	return ctx.Err()
}

// fetch leases jobs of one topic while handler slots are free. It holds slots only for the
// short non-blocking reserve; it waits for due jobs holding none, so that one idle topic cannot
// starve another.
func (w *Worker) fetch(ctx context.Context, t *topicState, lane store.Lane, h Handler) {
	defer w.fetchers.Done()
	defer w.pause()
	failures := 0
	for {
		n := w.takeSlots(ctx)
		if n == 0 {
			return
		}
		acks := w.takeAcks()
		jobs, acked, err := w.c.reserveDue(ctx, t, lane, n, 0, false, acks)
		w.settleAcks(ctx, acks, acked)
		for range n - len(jobs) {
			w.slots <- struct{}{}
		}
		for _, job := range jobs {
			w.run(t, job, h)
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			failures++
			w.log.Warn("delayq: reserve failed", "topic", t.name, "err", err)
			sleep(ctx, backoffDelay(failures))
		case len(jobs) == 0:
			failures = 0
			w.pause()
			w.c.waitDue(ctx, t, time.Now().Add(time.Minute))
			w.resume()
		default:
			failures = 0
		}
	}
}

// queueAck queues a finished job's ack for the next reserve call of an active fetcher, which
// the slot its handler frees wakes. It reports false when no fetcher is active: the caller
// acks the job itself.
func (w *Worker) queueAck(a ackReq) bool {
	w.ackMu.Lock()
	defer w.ackMu.Unlock()
	if w.active == 0 {
		return false
	}
	w.acks = append(w.acks, a)
	return true
}

func (w *Worker) takeAcks() []ackReq {
	w.ackMu.Lock()
	defer w.ackMu.Unlock()
	a := w.acks
	w.acks = nil
	return a
}

func (w *Worker) resume() {
	w.ackMu.Lock()
	w.active++
	w.ackMu.Unlock()
}

// pause marks a fetcher as waiting for due jobs (or gone); the last active one to pause acks
// what is queued, since no reserve call may come soon.
func (w *Worker) pause() {
	w.ackMu.Lock()
	w.active--
	var left []ackReq
	if w.active == 0 {
		left, w.acks = w.acks, nil
	}
	w.ackMu.Unlock()
	if len(left) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		w.settleAcks(ctx, left, w.c.flushAcks(ctx, left))
	}
}

// settleAcks logs the acks that failed. Those cut short by the fetcher's stop go back in the
// queue, for the last fetcher to send as it leaves.
func (w *Worker) settleAcks(ctx context.Context, acks []ackReq, errs []error) {
	for i, err := range errs {
		switch {
		case err == nil:
		case ctx.Err() != nil && !errors.Is(err, ErrLeaseLost):
			w.ackMu.Lock()
			w.acks = append(w.acks, acks[i])
			w.ackMu.Unlock()
		default:
			w.log.Warn("delayq: ack failed", "id", acks[i].lease.ID, "err", err)
		}
	}
}

// takeSlots blocks until a handler slot is free, then takes every free one. Before it looks for
// more, it yields once: handlers that are finishing on the other core return their slots, and
// one reserve call carries them all instead of one call each. It returns 0 when ctx ends first.
func (w *Worker) takeSlots(ctx context.Context) int {
	select {
	case <-ctx.Done():
		return 0
	case <-w.slots:
	}
	runtime.Gosched()
	n := 1
	for n < w.c.cfg.Limits.MaxReserve {
		select {
		case <-w.slots:
			n++
		default:
			return n
		}
	}
	return n
}

// run starts a handler for job in its own goroutine; the job's slot is freed when it ends.
func (w *Worker) run(t *topicState, job *Job, h Handler) {
	ctx, cancel := context.WithCancel(context.Background())
	w.mu.Lock()
	w.running[job] = cancel
	w.mu.Unlock()
	w.jobs.Add(1)
	go func() {
		defer w.jobs.Done()
		defer cancel()
		stopRenew := w.renew(ctx, job, cancel)
		err := callHandler(ctx, h, job)
		stopRenew()
		w.mu.Lock()
		_, mine := w.running[job]
		delete(w.running, job)
		w.mu.Unlock()
		// The handler's slot is free once it returns: the ack or nack is bookkeeping, and the
		// fetcher may lease the next job while it travels. A queued ack goes in before the slot
		// comes back, so that the fetcher the slot wakes carries it.
		if mine && err == nil && w.queueAck(ackReq{part: w.c.store.Partition(t.name, keys.PartitionOf(job.ID, t.partitionCount())), lease: store.Lease{ID: job.ID, Token: job.Lease}}) {
			w.slots <- struct{}{}
			return
		}
		w.slots <- struct{}{}
		if mine {
			w.finish(job, err)
		}
	}()
}

// callHandler runs h, turning a panic into an error that carries the panic's text.
func callHandler(ctx context.Context, h Handler, job *Job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return h(ctx, job)
}

// renew touches the job's lease every half TTR while its handler runs; a lost lease cancels
// the handler. It returns a function that stops the renewal.
func (w *Worker) renew(ctx context.Context, job *Job, lost context.CancelFunc) func() {
	// A timer rather than a goroutine per job: most handlers end long before their first renewal.
	every := max(job.TTR/2, 10*time.Millisecond)
	var mu sync.Mutex
	stopped := false
	var timer *time.Timer
	mu.Lock() // the callback reads timer
	defer mu.Unlock()
	timer = time.AfterFunc(every, func() {
		_, err := w.c.Touch(ctx, job.Topic, job.ID, job.Lease, job.TTR)
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return // the handler is done: its ack or nack settles the lease
		}
		if errors.Is(err, ErrLeaseLost) {
			w.log.Warn("delayq: lease lost while the handler ran", "topic", job.Topic, "id", job.ID)
			lost()
			return
		}
		timer.Reset(every)
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		timer.Stop()
	}
}

// finish acks or nacks job after its handler returned err.
func (w *Worker) finish(job *Job, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err == nil {
		if err := w.c.Ack(ctx, job.Topic, job.ID, job.Lease); err != nil {
			w.log.Warn("delayq: ack failed", "topic", job.Topic, "id", job.ID, "err", err)
		}
		return
	}
	o := NackOptions{Error: err.Error()}
	var he *handlerError
	if errors.As(err, &he) {
		o.Delay, o.Dead = he.delay, he.dead
	}
	if _, nerr := w.c.Nack(ctx, job.Topic, job.ID, job.Lease, o); nerr != nil {
		w.log.Warn("delayq: nack failed", "topic", job.Topic, "id", job.ID, "err", nerr)
	}
}

func backoffDelay(failures int) time.Duration {
	d := 50 * time.Millisecond << min(failures, 6)
	return min(d, 2*time.Second)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
