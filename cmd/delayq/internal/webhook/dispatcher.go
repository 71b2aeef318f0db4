// Package webhook delivers push jobs, the jobs that carry a callback URL: when one is due, the
// server POSTs it to that URL, signed as the Standard Webhooks specification says
// (https://www.standardwebhooks.com), and acks it on a 2xx answer within its TTR.
//
// A Dispatcher is a push delayq.Worker with a handler for every topic. Delivery is lease-based,
// so several servers on one Redis deliver each job once; a lost lease (a server that died
// mid-call) means a new attempt, so receivers should drop repeats by the webhook-id header, which
// stays the same over every attempt of a job. A Guard keeps callbacks away from loopback,
// private, link-local and other internal addresses, both when a job is enqueued and when it is
// delivered.
package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/metrics"
)

// Config configures a Dispatcher. Zero fields take the defaults.
type Config struct {
	// Client leases the jobs. Required.
	Client *delayq.Client
	// Secret is the signing key, as ParseSecret returns it. Required.
	Secret []byte
	// PreviousSecret, when set, signs every delivery too, next to Secret: the webhook-signature
	// header then carries two signatures, and a receiver that knows either secret verifies. It
	// is for rotating the secret without downtime (see docs/webhooks.md). Optional.
	PreviousSecret []byte
	// Guard decides which addresses callbacks may reach. Defaults to NewGuard(nil): public
	// addresses only.
	Guard *Guard
	// Concurrency is how many deliveries run at once over all topics. Defaults to 16.
	Concurrency int
	// TopicScan is how often the Dispatcher looks for topics it does not deliver yet.
	// Defaults to 1s.
	TopicScan time.Duration
	// Metrics receives delivery counts and durations; nil records none.
	Metrics *metrics.Metrics
	// Logger receives delivery failures. Defaults to slog.Default().
	Logger *slog.Logger
}

// Dispatcher delivers the push jobs of every topic.
type Dispatcher struct {
	cfg    Config
	http   *http.Client
	worker *delayq.Worker
	log    *slog.Logger

	mu       sync.Mutex
	topics   map[string]bool // topics with a handler
	started  bool
	stopped  bool
	cancel   context.CancelFunc // ends the topic scan
	scanDone chan struct{}      // closed when the topic scan has ended
	stopping chan struct{}      // closed once Stop has ended the scan and waits for deliveries
}

// New returns a Dispatcher for cfg; Start sets it going.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Client == nil {
		return nil, errors.New("webhook: Config.Client is required")
	}
	if len(cfg.Secret) == 0 {
		return nil, errors.New("webhook: Config.Secret is required")
	}
	if cfg.Guard == nil {
		cfg.Guard = NewGuard(nil)
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 16
	}
	if cfg.Concurrency < 1 {
		return nil, fmt.Errorf("webhook: Config.Concurrency %d is below 1", cfg.Concurrency)
	}
	if cfg.TopicScan == 0 {
		cfg.TopicScan = time.Second
	}
	if cfg.TopicScan < 0 {
		return nil, fmt.Errorf("webhook: Config.TopicScan %v is negative", cfg.TopicScan)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	w, err := delayq.NewWorker(cfg.Client, delayq.WorkerConfig{
		Concurrency: cfg.Concurrency,
		Push:        true,
		Logger:      cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	return &Dispatcher{
		cfg:      cfg,
		http:     cfg.Guard.HTTPClient(),
		worker:   w,
		log:      cfg.Logger,
		topics:   map[string]bool{},
		stopping: make(chan struct{}),
	}, nil
}

// Start starts delivering the push jobs of every existing topic, and of every new topic within
// TopicScan of its creation (Watch does it at once). It returns when the existing topics are
// registered; ctx bounds that, not the Dispatcher's life, which lasts until Stop.
func (d *Dispatcher) Start(ctx context.Context) error {
	d.mu.Lock()
	if d.started {
		d.mu.Unlock()
		return errors.New("webhook: Dispatcher already started")
	}
	d.started = true
	d.mu.Unlock()

	if err := d.worker.Start(ctx); err != nil {
		return fmt.Errorf("webhook: starting the push worker: %w", err)
	}
	if err := d.scan(ctx); err != nil {
		_ = d.worker.Stop(ctx)
		return err
	}
	scanCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped { // Stop ran meanwhile and has stopped the Worker
		cancel()
		return delayq.ErrClosed
	}
	d.cancel, d.scanDone = cancel, done
	go d.scanLoop(scanCtx, done)
	return nil
}

// Watch makes the Dispatcher deliver topic's push jobs, at once rather than at the next topic
// scan: a server calls it when it enqueues the first push job of a new topic. Watching a topic
// twice is a no-op. After Stop it returns delayq.ErrClosed.
func (d *Dispatcher) Watch(ctx context.Context, topic string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return delayq.ErrClosed
	}
	if d.topics[topic] {
		return nil
	}
	if err := d.worker.Handle(topic, d.deliver); err != nil {
		return fmt.Errorf("webhook: watching topic %q: %w", topic, err)
	}
	d.topics[topic] = true
	return nil
}

// scan watches every topic that exists.
func (d *Dispatcher) scan(ctx context.Context) error {
	names, err := d.cfg.Client.TopicNames(ctx)
	if err != nil {
		return fmt.Errorf("webhook: listing topics: %w", err)
	}
	for _, name := range names {
		if err := d.Watch(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// scanLoop looks for new topics every TopicScan until ctx ends.
func (d *Dispatcher) scanLoop(ctx context.Context, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(d.cfg.TopicScan)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := d.scan(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("webhook: looking for new topics", "err", err)
		}
	}
}

// Stop stops taking jobs and waits for the deliveries in flight to finish until ctx ends; then
// it cuts the rest short and releases their leases, so that they are due again at once (for
// another server, or this one's successor) and the cut attempt does not count. It returns ctx's
// error when deliveries had to be cut. Stopping twice, or before Start, is a no-op.
func (d *Dispatcher) Stop(ctx context.Context) error {
	d.mu.Lock()
	if !d.started || d.stopped {
		d.mu.Unlock()
		return nil
	}
	d.stopped = true
	cancel, done := d.cancel, d.scanDone
	d.mu.Unlock()

	if cancel != nil { // nil when Start failed half-way
		cancel()
		<-done
	}
	close(d.stopping)
	err := d.worker.Stop(ctx)
	d.http.CloseIdleConnections()
	if err != nil {
		return fmt.Errorf("webhook: stopping: %w", err)
	}
	return nil
}
