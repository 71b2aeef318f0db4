package delayq

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/delayq/delayq/internal/coalesce"
	"github.com/delayq/delayq/internal/ids"
	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/store"
	"github.com/delayq/delayq/internal/tracing"
	"github.com/delayq/delayq/internal/wake"
)

// Limits bound what a request may ask for. Zero fields take the defaults.
type Limits struct {
	MaxBody    int           // Defaults to 1 MiB.
	MaxDelay   time.Duration // Defaults to 10 years.
	MinTTR     time.Duration // Defaults to 100ms.
	MaxTTR     time.Duration // Defaults to 24h.
	MaxRetries int           // Defaults to 1000.
	MaxSnoozes int           // Bounds Spec.MaxSnoozes. Defaults to 1000000.
	MaxBatch   int           // Defaults to 1000 jobs.
	MaxReserve int           // Defaults to 1000 jobs.
	// MaxReserveBytes bounds ReserveOptions.MaxBytes: a reply is built in memory. Defaults to
	// 256 MiB.
	MaxReserveBytes int64
	MaxWait         time.Duration // Defaults to 60s.
}

// WithDefaults returns l with its zero fields set to the defaults.
func (l Limits) WithDefaults() Limits {
	l.setDefaults()
	return l
}

func (l *Limits) setDefaults() {
	set := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setD := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	set(&l.MaxBody, 1<<20)
	setD(&l.MaxDelay, 10*365*24*time.Hour)
	setD(&l.MinTTR, 100*time.Millisecond)
	setD(&l.MaxTTR, 24*time.Hour)
	set(&l.MaxRetries, 1000)
	set(&l.MaxSnoozes, 1_000_000)
	set(&l.MaxBatch, 1000)
	set(&l.MaxReserve, 1000)
	if l.MaxReserveBytes == 0 {
		l.MaxReserveBytes = 256 << 20
	}
	setD(&l.MaxWait, 60*time.Second)
}

// Config configures a Client. Zero fields take the defaults.
type Config struct {
	// Namespace prefixes every key, so several deployments can share one Redis. Defaults to "delayq".
	Namespace string
	// Partitions is how many partitions a new topic is split over; each has its own hash tag, so a
	// Redis Cluster spreads a topic over its shards. A topic keeps the count it was created with.
	// A reserve over several partitions looks at their heads first and takes the best jobs of
	// all (see Reserve). Defaults to 16 on a Redis Cluster and 1 elsewhere, where more buy
	// nothing.
	Partitions int
	// Limits bound requests.
	Limits Limits
	// PollInterval, when set, replaces pub/sub wake-ups with polling at this interval, for proxies
	// that lack pub/sub (Codis, Twemproxy). Zero: consumers are woken by shard pub/sub notices.
	PollInterval time.Duration
	// RecheckInterval is how often a waiting consumer looks again without a notice, in case one
	// was lost. Defaults to 1s.
	RecheckInterval time.Duration
	// BulkLimit bounds how many jobs one script moves (promotions, expired leases, dead-letter
	// requeues), so that no script blocks Redis for long. Defaults to 1000.
	BulkLimit int
	// Logger receives warnings. Defaults to slog.Default().
	Logger *slog.Logger
	// WaitReplicas, when above 0, makes each enqueue wait until that many replicas confirm its
	// writes (Redis WAIT), so that a failover to a replica cannot lose a job whose enqueue
	// succeeded. An enqueue that fewer replicas confirm within WaitTimeout returns an error,
	// although its jobs were written to the primary and may still be delivered. Not supported
	// on a Redis Cluster client. Defaults to 0: no waiting.
	WaitReplicas int
	// WaitTimeout bounds that wait; keep it below the Redis client's read timeout. Defaults to 1s.
	WaitTimeout time.Duration
	// ReplayWindow is how long Redis keeps the outcome of each state change, so that the same
	// call sent again answers as the first did instead of acting twice: go-redis re-sends a
	// command whose connection broke after it was written (up to MaxRetries times, also after
	// a Redis restart or failover), and a caller may repeat an Ack, Nack or Release with the
	// same lease. An Enqueue of a job with an id repeated within the window of the job's
	// creation answers the first call's job even once the job has run and ended, and a Cancel
	// repeated answers nil again (docs/states.md, "Retrying an enqueue or a cancel"). A repeat
	// after the window acts afresh: an enqueue then meets ErrExists (or adds a new job, when
	// the first has ended), a settled lease ErrLeaseLost. Each recorded call costs Redis memory
	// for the window (about 170 bytes), and so does each job with an id that ends within the
	// window of its creation (136 bytes). Defaults to 30s; negative keeps nothing (replays are
	// then not safe).
	ReplayWindow time.Duration
	// UniqueFor is the Spec.UniqueFor of jobs enqueued with an id that set none, in topics
	// without a default of their own (SetTopicDefaults): how long such a job's id stays taken
	// once it ends. Defaults to 0: ids are free again once their jobs end (and their replay
	// window closes).
	UniqueFor time.Duration
	// ExpireAllLeases makes the Client expire the leases of every topic of the namespace at
	// their deadlines, not only of the topics it consumes (by Reserve or a Worker, which it
	// always does): a topic nobody consumes any more still has its expired leases' jobs
	// retried or sent to the dead letters on time, and every view of them is true. delayq
	// server sets it. It costs a subscription to every partition and one script call per
	// lease that reaches its deadline.
	ExpireAllLeases bool
	// TracerProvider makes the OpenTelemetry spans of enqueues, reserves, acks, nacks, releases
	// and Worker deliveries (docs/observability.md). Nil: the global provider, as installed by
	// otel.SetTracerProvider, which makes no spans until a program installs an SDK.
	TracerProvider trace.TracerProvider
}

var namespacePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)

func (c *Config) validate() error {
	if c.Namespace == "" {
		c.Namespace = "delayq"
	}
	if !namespacePattern.MatchString(c.Namespace) {
		return invalid("namespace", "%q must match %s", c.Namespace, namespacePattern)
	}
	if c.Partitions < 1 || c.Partitions > 1024 {
		return invalid("partitions", "%d is outside 1 to 1024", c.Partitions)
	}
	if c.PollInterval < 0 {
		return invalid("poll_interval", "must not be negative")
	}
	if c.RecheckInterval == 0 {
		c.RecheckInterval = time.Second
	}
	if c.RecheckInterval < 0 {
		return invalid("recheck_interval", "must not be negative")
	}
	if c.BulkLimit == 0 {
		c.BulkLimit = 1000
	}
	if c.BulkLimit < 1 || c.BulkLimit > 100000 {
		return invalid("bulk_limit", "%d is outside 1 to 100000", c.BulkLimit)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.WaitTimeout == 0 {
		c.WaitTimeout = time.Second
	}
	if c.ReplayWindow == 0 {
		c.ReplayWindow = 30 * time.Second
	}
	if c.ReplayWindow < 0 {
		c.ReplayWindow = 0
	}
	if c.UniqueFor < 0 {
		return invalid("unique_for", "must not be negative")
	}
	if c.WaitReplicas < 0 || c.WaitTimeout < 0 {
		return invalid("wait_replicas", "replicas %d and timeout %v must not be negative", c.WaitReplicas, c.WaitTimeout)
	}
	c.Limits.setDefaults()
	return nil
}

// Client produces and consumes jobs. It is safe for concurrent use.
type Client struct {
	cfg   Config
	store *store.Store
	log   *slog.Logger
	trace tracing.Tracer
	newID func() string // makes the ids of jobs enqueued without one

	enqueuer *coalesce.Coalescer[enqueueReq, enqueueRes]
	acker    *coalesce.Coalescer[ackReq, error]

	mu     sync.Mutex
	topics map[string]*wake.Topic
	users  map[*wake.Topic]int // consumers of each state (useTopic)
	// registered is when each topic this process enqueued to was last seen registered.
	registered map[string]time.Time
	closed     bool
	// hub wakes waiting consumers on notices; it has its own locks.
	hub *wake.Hub
	// stopArchive ends followArchive.
	stopArchive chan struct{}

	// leases are the partitions whose leases this Client expires (expiry.go); stopLeases ends
	// the goroutine that expires them, started once, which closes keeperDone when it ends.
	leases     *wake.Leases
	stopLeases chan struct{}
	keeperOnce sync.Once
	keeperDone chan struct{}
}

// New returns a Client on rdb, which may be a standalone, Sentinel (failover) or Cluster client.
// It checks the server once and logs a warning when its settings can lose jobs: an eviction
// policy other than noeviction, or neither AOF nor RDB persistence.
func New(ctx context.Context, rdb redis.UniversalClient, cfg Config) (*Client, error) {
	if rdb == nil {
		return nil, invalid("redis", "a client is required")
	}
	if cfg.Partitions == 0 {
		cfg.Partitions = 1
		if _, ok := rdb.(*redis.ClusterClient); ok {
			cfg.Partitions = 16
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if _, ok := rdb.(*redis.ClusterClient); ok && cfg.WaitReplicas > 0 {
		return nil, invalid("wait_replicas", "not supported on a Redis Cluster client")
	}
	c := &Client{
		cfg:    cfg,
		store:  store.New(rdb, cfg.Namespace),
		log:    cfg.Logger,
		trace:  tracing.New(cfg.TracerProvider),
		newID:  ids.New,
		topics: make(map[string]*wake.Topic),
		users:  make(map[*wake.Topic]int),
		hub:    wake.NewHub(rdb, cfg.Logger, keys.NewTopics(cfg.Namespace)),
		leases: wake.NewLeases(),

		stopLeases: make(chan struct{}),

		registered: make(map[string]time.Time),
	}
	// Enqueues: one flush in flight while the next one fills. Fewer, fuller round trips beat
	// overlapping ones where client and Redis share a few cores (BenchmarkEnqueue: about 14 %
	// more jobs/s than with two). Acks: two, as a Worker's acks mostly ride with its reserves.
	c.enqueuer = coalesce.New(cfg.Limits.MaxBatch, 1, c.flushEnqueues)
	c.acker = coalesce.New(cfg.Limits.MaxBatch, 2, c.flushAcks)
	c.store.SetWaitReplicas(cfg.WaitReplicas, cfg.WaitTimeout)
	c.store.SetReplayWindow(cfg.ReplayWindow)
	c.store.SetDefaultUniqueFor(cfg.UniqueFor)
	if err := c.checkServer(ctx); err != nil {
		return nil, err
	}
	if err := c.readArchiveSetting(ctx); err != nil {
		return nil, err
	}
	c.stopArchive = make(chan struct{})
	go c.followArchive(c.stopArchive)
	if cfg.ExpireAllLeases {
		if cfg.PollInterval == 0 {
			c.hub.AwaitTopics(c.leases)
		}
		c.startLeaseKeeper()
	}
	return c, nil
}

// Close stops the Client's background wake-up listeners. It does not close the Redis client.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	close(c.stopArchive)
	close(c.stopLeases)
	c.keeperOnce.Do(func() {}) // no keeper starts after this
	if c.keeperDone != nil {
		<-c.keeperDone
	}
	c.hub.Close()
	return nil
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// checkServer warns about server settings that lose jobs. Sentinel and Cluster clients ask one
// node, which is enough to catch a misconfigured deployment.
func (c *Client) checkServer(ctx context.Context) error {
	rdb := c.store.Client()
	policy, err := rdb.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		if strings.Contains(err.Error(), "unknown command") {
			return nil // a proxy or managed Redis that hides CONFIG
		}
		return fmt.Errorf("delayq: checking the Redis server: %w", err)
	}
	if p := policy["maxmemory-policy"]; p != "" && p != "noeviction" {
		c.log.Warn("delayq: Redis maxmemory-policy is not noeviction: under memory pressure Redis will silently delete queued jobs", "maxmemory-policy", p)
	}
	persist, err := rdb.ConfigGet(ctx, "appendonly").Result()
	if err != nil {
		return nil
	}
	save, err := rdb.ConfigGet(ctx, "save").Result()
	if err != nil {
		return nil
	}
	if persist["appendonly"] != "yes" && strings.TrimSpace(save["save"]) == "" {
		c.log.Warn("delayq: Redis keeps neither AOF nor RDB: a restart loses every job; set appendonly yes (appendfsync everysec or always)")
	}
	return nil
}

// partitions returns a topic's partition count, registering the topic when create is true, and
// a NotFoundError for an unknown topic otherwise.
func (c *Client) partitions(ctx context.Context, topic string, create bool) (int, error) {
	if err := ValidateTopic(topic); err != nil {
		return 0, err
	}
	known, fresh := c.knownPartitions(topic)
	if known > 0 && (fresh || !create) {
		return known, nil
	}
	if create {
		return c.register(ctx, topic, known)
	}
	n, err := c.store.TopicPartitions(ctx, topic)
	if errors.Is(err, store.ErrNotFound) {
		return 0, &NotFoundError{Topic: topic}
	}
	if err != nil {
		return 0, err
	}
	// Only topics that exist are remembered: asking about made-up names costs no memory.
	c.topic(topic, topic).SetPartitionCount(n)
	return n, nil
}

// register registers topic unless it is registered already, with the partition count this
// process knows for it (0: none yet, and the Config's then), and returns the count the topic
// has. A producer registers its topics again once per recheck interval: should the topic have
// been deleted meanwhile, the jobs it enqueues are listed again.
func (c *Client) register(ctx context.Context, topic string, known int) (int, error) {
	want := known
	if want == 0 {
		want = c.cfg.Partitions
	}
	n, err := c.store.RegisterTopic(ctx, topic, want)
	if err != nil {
		return 0, err
	}
	if known > 0 && n != known {
		// Deleted and made again elsewhere with another count: this process's consumers of the
		// topic keep the count they knew until it restarts.
		c.log.Warn("delayq: topic made again with another partition count", "topic", topic, "partitions", n, "was", known)
		c.forgetTopic(topic)
	}
	c.topic(topic, topic).SetPartitionCount(n)
	c.mu.Lock()
	c.registered[topic] = time.Now()
	c.mu.Unlock()
	return n, nil
}

// knownPartitions returns the partition count of a topic this process has seen, or 0, and
// whether the topic was seen registered within the recheck interval.
func (c *Client) knownPartitions(topic string) (n int, fresh bool) {
	c.mu.Lock()
	t := c.topics[topic]
	at, ok := c.registered[topic]
	c.mu.Unlock()
	if t == nil {
		return 0, false
	}
	return t.PartitionCount(), ok && time.Since(at) < c.recheckInterval()
}

// forgetTopic forgets what this process knew of a deleted topic as a producer: its next
// enqueue registers it anew.
func (c *Client) forgetTopic(topic string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.topics, topic)
	delete(c.registered, topic)
}

// partitionOf returns the keys of the partition that holds job id.
func (c *Client) partitionOf(ctx context.Context, topic, id string, create bool) (keys.Partition, error) {
	n, err := c.partitions(ctx, topic, create)
	if err != nil {
		return keys.Partition{}, err
	}
	return c.store.Partition(topic, keys.PartitionOf(id, n)), nil
}

// topic returns the process-wide state stored under key for topic name, creating it on first use.
func (c *Client) topic(key, name string) *wake.Topic {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.topics[key]
	if !ok {
		t = wake.NewTopic(name)
		c.topics[key] = t
	}
	return t
}

// useTopic is topic for a consumer, which calls the returned function when it is done with
// the state. The state of a topic that does not exist is forgotten when its last consumer is
// done, so that waiting on made-up names costs no memory once the waits end.
func (c *Client) useTopic(key, name string) (*wake.Topic, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.topics[key]
	if !ok {
		t = wake.NewTopic(name)
		c.topics[key] = t
	}
	c.users[t]++
	return t, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.users[t]--
		if c.users[t] > 0 {
			return
		}
		delete(c.users, t)
		if t.PartitionCount() == 0 && c.topics[key] == t {
			delete(c.topics, key)
			c.hub.Forget(t)
		}
	}
}

// newLeasePrefix returns 96 random bits, base64url: a lease cannot be guessed.
func newLeasePrefix() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
