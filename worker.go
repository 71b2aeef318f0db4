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

	"github.com/delayq/delayq/internal/ackq"
	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/store"
	"github.com/delayq/delayq/internal/tracing"
	"github.com/delayq/delayq/internal/wake"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Handler processes one job. Returning nil acks it; an error nacks it, to be retried after its
// backoff step (see RetryIn and DeadLetter to choose otherwise, and Snooze to put the job back
// without a failure). ctx ends when the Worker is stopped by force or when the job's lease is
// lost.
type Handler func(ctx context.Context, job *Job) error

// Middleware wraps a Handler: it may act before and after it, give it another context, or
// change its error. Worker.Use puts middleware around every topic's handler; the package
// github.com/delayq/delayq/middleware has ready-made ones.
type Middleware func(Handler) Handler

// RetryIn returns an error that makes a Handler's job due again after d instead of its backoff step.
func RetryIn(d time.Duration, err error) error { return &handlerError{err: err, delay: &d} }

// DeadLetter returns an error that sends a Handler's job to the dead letters at once.
func DeadLetter(err error) error { return &handlerError{err: err, dead: true} }

// Snooze returns an error that puts a Handler's job back, due again after d, without counting
// the attempt: the job is not done and has not failed (a rate-limited downstream, say). The
// Worker releases the lease with that delay, as Client.Release does; the job counts one more
// Snoozes, and a job past its Spec.MaxSnoozes goes to the dead letters instead.
func Snooze(d time.Duration) error {
	return &handlerError{err: fmt.Errorf("snoozed for %s", d), delay: &d, snooze: true}
}

type handlerError struct {
	err    error
	delay  *time.Duration
	dead   bool
	snooze bool
}

func (e *handlerError) Error() string { return fmt.Sprint(e.err) }
func (e *handlerError) Unwrap() error { return e.err }

// WorkerConfig configures a Worker. Zero fields take the defaults.
type WorkerConfig struct {
	// Concurrency is how many handlers run at once over all topics. A Worker never leases more
	// jobs than it has free handler slots, so no job waits in its memory. Defaults to 10.
	Concurrency int
	// Push makes the Worker take the jobs that carry a CallbackURL (which pull consumers never
	// see) instead of the others. delayq server's webhook dispatcher is a push Worker; set it to
	// deliver callback jobs some other way.
	Push bool
	// Logger receives handler failures. Defaults to the Client's.
	Logger *slog.Logger
	// LinkTraces starts each delivery's span (see docs/observability.md) as a new trace linked
	// to the trace the job was enqueued in, instead of as a child in that trace. A job due hours
	// after its enqueue makes an hours-long trace otherwise; a linked one stays one delivery.
	LinkTraces bool
}

// Worker runs handlers for the due jobs of its topics.
type Worker struct {
	c     *Client
	cfg   WorkerConfig
	log   *slog.Logger
	slots chan struct{} // a token per free handler slot

	mu         sync.Mutex
	handlers   map[string]Handler
	middleware []Middleware // outermost first
	started    bool
	running    map[*Job]context.CancelFunc
	baseCtx    context.Context // Start's ctx without its cancellation: the handlers' parent
	fetchCtx   context.Context

	fetchCancel context.CancelFunc
	fetchers    sync.WaitGroup
	jobs        sync.WaitGroup

	// Finished jobs are acked by the next reserve call of a fetcher, which carries the acks of
	// its partition along: a busy Worker makes one round trip per batch of jobs, not one per
	// batch plus one per ack (internal/ackq). Nacks that fail for a passing reason are tried
	// again until they go through, the lease is lost or its deadline passes (worker_settle.go).
	acks *ackq.Queue
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
	w.acks = ackq.New(func(ctx context.Context, acks []ackq.Ack) []error {
		return c.flushAcks(ctx, requests(acks))
	}, cfg.Logger)
	for range cfg.Concurrency {
		w.slots <- struct{}{}
	}
	return w, nil
}

// Handle registers h for topic; it asks Redis nothing. Called after Start, it starts fetching the
// topic at once; a topic has one handler, and registering it again is an error.
func (w *Worker) Handle(topic string, h Handler) error {
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
		if err := w.startFetch(topic, h); err != nil {
			return err
		}
	}
	w.handlers[topic] = h
	return nil
}

// Use puts mw around the handler of every topic, registered before or after, the first given
// outermost; middleware added by earlier calls stays outside it. Call it before Start. A panic
// in middleware is caught as one in a handler is: the job is nacked with the panic's text.
func (w *Worker) Use(mw ...Middleware) error {
	for _, m := range mw {
		if m == nil {
			return invalid("middleware", "must not be nil")
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return errors.New("delayq: Use after Start: middleware goes around handlers before they run")
	}
	w.middleware = append(w.middleware, mw...)
	return nil
}

// wrapped returns h inside the Worker's middleware.
func (w *Worker) wrapped(h Handler) Handler {
	for i := len(w.middleware) - 1; i >= 0; i-- {
		h = w.middleware[i](h)
	}
	return h
}

// Start begins fetching and running jobs of every registered topic and returns at once. The
// handlers' contexts carry ctx's values; ending ctx does not stop the Worker or its handlers:
// Stop does.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return errors.New("delayq: Worker already started")
	}
	w.baseCtx = context.WithoutCancel(ctx)
	w.fetchCtx, w.fetchCancel = context.WithCancel(w.baseCtx)
	for topic, h := range w.handlers {
		if err := w.startFetch(topic, h); err != nil {
			w.fetchCancel()
			return err
		}
	}
	w.started = true
	return nil
}

// startFetch starts the fetch loop of one topic, which finds the topic in Redis; w.mu is held.
func (w *Worker) startFetch(topic string, h Handler) error {
	h = w.wrapped(h) // the middleware is fixed once the Worker has started
	t, lane, done, err := w.c.consumerTopic(topic, w.cfg.Push)
	if err != nil {
		return err
	}
	w.fetchers.Add(1)
	w.acks.Resume()
	go func() {
		defer done()
		w.fetch(w.fetchCtx, t, lane, h)
	}()
	return nil
}

// Stop stops fetching, waits for running handlers to finish and for every ack and nack to be
// sent, until ctx ends. Then it cancels the remaining handlers and releases their leases, so
// that their jobs are due again at once instead of after their TTR, and gives up on acks and
// nacks not yet sent (their jobs come back after their TTR). It returns ctx's error when
// anything had to be cut short.
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
	w.acks.StopTimed()

	if waitCtx(ctx, &w.jobs) {
		// Every handler is done and has sent its ack or nack, or left it to the retry loop.
		w.acks.Close()
		if w.acks.Wait(ctx) {
			return nil
		}
		w.acks.Cancel()
		return ctx.Err()
	}
	w.mu.Lock()
	cut := make([]*Job, 0, len(w.running))
	for job, cancel := range w.running {
		cancel()
		cut = append(cut, job)
		delete(w.running, job)
	}
	w.mu.Unlock()
	w.acks.Close()
	w.acks.Cancel()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, job := range cut {
		// A release at shutdown is not the handler's choice: no delay, so no snooze.
		if _, err := w.c.Release(rctx, job.Lease(), ReleaseOptions{}); err != nil && !errors.Is(err, ErrLeaseLost) {
			w.log.Error("delayq: releasing a job at shutdown", "topic", job.Topic, "id", job.ID, "err", err)
		}
	}
	return ctx.Err()
}

// waitCtx waits for wg until ctx ends, and reports whether wg finished.
func waitCtx(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// fetch leases jobs of one topic while handler slots are free. It holds slots only for the
// short non-blocking reserve; it waits for due jobs holding none, so that one idle topic cannot
// starve another.
func (w *Worker) fetch(ctx context.Context, t *wake.Topic, lane store.Lane, h Handler) {
	defer w.fetchers.Done()
	defer w.acks.Pause()
	failures := 0
	for {
		n := w.takeSlots(ctx)
		if n == 0 {
			return
		}
		acks := w.acks.Take()
		err := w.c.learnTopic(ctx, t)
		var r reservation
		if err == nil {
			r, err = w.c.reserveDue(ctx, t, lane, reserveAsk{max: n, maxBytes: DefaultReserveBytes, acks: requests(acks)})
		} else {
			r.acked = repeat(err, len(acks))
		}
		w.acks.Settle(acks, r.acked)
		for range n - len(r.jobs) {
			w.slots <- struct{}{}
		}
		for _, job := range r.jobs {
			w.run(t, job, h)
		}
		jobs := r.jobs
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			failures++
			w.log.Warn("delayq: reserve failed", "topic", t.Name, "err", err)
			sleep(ctx, backoffDelay(failures))
		case len(jobs) == 0:
			failures = 0
			w.acks.Pause()
			w.c.waitDue(ctx, t, time.Now().Add(time.Minute))
			w.acks.Resume()
		default:
			failures = 0
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
func (w *Worker) run(t *wake.Topic, job *Job, h Handler) {
	ctx, cancel := context.WithCancel(w.baseCtx)
	w.mu.Lock()
	w.running[job] = cancel
	w.mu.Unlock()
	w.jobs.Add(1)
	go func() {
		defer w.jobs.Done()
		defer cancel()
		stopRenew := w.renew(ctx, job, cancel)
		ctx, span := w.startSpan(ctx, job)
		err := callHandler(ctx, h, job)
		deadline := stopRenew()
		endSpan(span, err)
		w.mu.Lock()
		_, mine := w.running[job]
		delete(w.running, job)
		w.mu.Unlock()
		// The handler's slot is free once it returns: the ack or nack is bookkeeping, and the
		// fetcher may lease the next job while it travels. A queued ack goes in before the slot
		// comes back, so that the fetcher the slot wakes carries it.
		f := ackq.Ack{
			Part:  w.c.store.Partition(t.Name, keys.PartitionOf(job.ID, t.PartitionCount())),
			Lease: store.Lease{ID: job.ID, Token: job.LeaseToken}, Topic: job.Topic, Deadline: deadline,
		}
		if mine && err == nil && w.acks.Add(f) {
			w.slots <- struct{}{}
			return
		}
		w.slots <- struct{}{}
		if mine {
			w.finish(trace.ContextWithSpan(w.acks.Context(), span), f, err)
		}
	}()
}

// startSpan starts the span of a job's delivery to its handler: "process <topic>", or
// "deliver <topic>" on a push Worker.
func (w *Worker) startSpan(ctx context.Context, job *Job) (context.Context, trace.Span) {
	op := tracing.Process
	if w.cfg.Push {
		op = tracing.Deliver
	}
	return w.c.trace.StartJob(ctx, op, job.Topic, job.ID, job.Attempts, job.Headers, w.cfg.LinkTraces)
}

// outcomeKey is the attribute of a delivery span that says how the delivery ended: ack, nack,
// dead or snooze (as the handler asked; Nack and Release decide by the job's retries and snoozes
// left).
const outcomeKey = attribute.Key("delayq.outcome")

// endSpan ends a delivery's span after its handler returned err.
func endSpan(span trace.Span, err error) {
	outcome := "ack"
	var he *handlerError
	switch {
	case errors.As(err, &he) && he.dead:
		outcome = "dead"
	case he != nil && he.snooze:
		outcome = "snooze"
	case err != nil:
		outcome = "nack"
	}
	tracing.Set(span, outcomeKey.String(outcome))
	tracing.End(span, err)
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

// renew keeps the job's lease while its handler runs: it touches it every third of its TTR,
// and a touch that fails for a passing reason is tried again
// soon, well before the deadline, not a whole step later. A lost lease cancels the handler. It
// returns a function that stops the renewal and returns the lease deadline as last known
// (local clock).
func (w *Worker) renew(ctx context.Context, job *Job, lost context.CancelFunc) func() time.Time {
	// A timer rather than a goroutine per job: most handlers end long before their first renewal.
	// The touch asks for the job's own TTR (0), which no limit of this Client can refuse.
	ttr := job.TTR
	every := max(ttr/3, 10*time.Millisecond)
	var mu sync.Mutex
	stopped := false
	deadline := time.Now().Add(ttr)
	failures := 0
	var timer *time.Timer
	mu.Lock() // the callback reads timer
	defer mu.Unlock()
	timer = time.AfterFunc(every, func() {
		sent := time.Now()
		_, err := w.c.Touch(ctx, job.Lease(), 0)
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return // the handler is done: its ack or nack settles the lease
		}
		switch {
		case err == nil:
			failures = 0
			deadline = sent.Add(ttr)
			timer.Reset(every)
		case errors.Is(err, ErrLeaseLost):
			w.log.Warn("delayq: lease lost while the handler ran", "topic", job.Topic, "id", job.ID)
			lost()
		case time.Now().After(deadline):
			w.log.Warn("delayq: lease renewal failed until the deadline; the job may be delivered again", "topic", job.Topic, "id", job.ID, "err", err)
		default:
			failures++
			w.log.Warn("delayq: lease renewal failed; trying again", "topic", job.Topic, "id", job.ID, "err", err)
			timer.Reset(min(ackq.Delay(failures), max(time.Until(deadline)/3, time.Millisecond)))
		}
	})
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		timer.Stop()
		return deadline
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
