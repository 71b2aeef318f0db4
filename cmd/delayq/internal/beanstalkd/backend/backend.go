// Package backend is the beanstalkd front end's proto.Backend on a delayq.Client: a tube is a
// topic, a beanstalkd job an ordinary delayq job (visible over HTTP, in the dashboard and the
// CLI), bury is dead and kick is requeue. docs/beanstalkd.md has the mapping.
package backend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/proto"
	"github.com/delayq/delayq/internal/coalesce"
	"github.com/delayq/delayq/internal/core"
	"github.com/delayq/delayq/internal/store"
)

// Backend carries out beanstalkd commands on a delayq.Client.
type Backend struct {
	c        *delayq.Client
	inside   core.Client[*delayq.Job] // c's beanstalkd semantics
	st       *store.Store
	log      *slog.Logger
	issuer   *coalesce.Coalescer[string, issued]     // the ids of puts, by topic
	reserver *coalesce.Coalescer[[]string, reserved] // reserves without a wait, by watched topics

	mu       sync.Mutex
	sessions map[proto.Session]map[uint64]held // the jobs each connection holds
	timers   map[string]pauseTimer             // the resumes of paused topics, by topic
	watching bool                              // Start's rereading of the pauses runs
	closed   bool                              // no more timers
	stop     chan struct{}                     // closed by Close
}

// pauseTimer resumes a topic when its pause, which ends at untilMs, ends.
type pauseTimer struct {
	t       *time.Timer
	untilMs int64
}

// held is a job a connection reserved.
type held struct {
	job   store.BeanstalkdJob
	lease delayq.Lease
}

// New returns a Backend on c.
func New(c *delayq.Client, log *slog.Logger) *Backend {
	if log == nil {
		log = slog.Default()
	}
	in := c.Core(core.Pass)
	b := &Backend{
		c: c, inside: in, st: in.Store(), log: log,
		sessions: map[proto.Session]map[uint64]held{},
		timers:   map[string]pauseTimer{},
		stop:     make(chan struct{}),
	}
	b.issuer = coalesce.New(maxIssue, 1, b.issue)
	// One flush at a time: two library Reserves of one topic at once, over several partitions,
	// may each lease past the other's heads, out of priority order.
	b.reserver = coalesce.New(maxReserveBatch, 1, b.reserveNow)
	return b
}

// maxIssue bounds the ids one call issues.
const maxIssue = 1000

// issued is an id issued for a put, or why none was.
type issued struct {
	n   uint64
	err error
}

// issue issues the ids of concurrent puts in one call: consecutive, in the order of topics.
func (b *Backend) issue(ctx context.Context, topics []string) []issued {
	first, err := b.st.IssueBeanstalkdIDs(ctx, topics)
	out := make([]issued, len(topics))
	for i := range out {
		out[i] = issued{n: first + uint64(i), err: err}
	}
	return out
}

// topicOf returns the topic of a tube: the tube's own name when it is a valid topic name, else
// a name made from its hash (beanstalkd allows "+/;$()" and a leading "_" or ".", topics do
// not), whose tube name is stored for listing.
func topicOf(tube string) string {
	if delayq.ValidateTopic(tube) == nil {
		return tube
	}
	sum := sha256.Sum256([]byte(tube))
	return hashedPrefix + hex.EncodeToString(sum[:16])
}

const hashedPrefix = "beanstalkd-tube-"

// tubeOf returns the tube name of a topic.
func (b *Backend) tubeOf(ctx context.Context, topic string) (string, error) {
	if len(topic) != len(hashedPrefix)+32 || topic[:len(hashedPrefix)] != hashedPrefix {
		return topic, nil
	}
	name, err := b.st.BeanstalkdTube(ctx, topic)
	if err != nil || name == "" {
		return topic, err
	}
	return name, nil
}

// storeError turns a store error into a beanstalkd reply where there is one.
func storeError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, delayq.ErrNotFound), errors.Is(err, delayq.ErrDone), errors.Is(err, delayq.ErrLeaseLost), errors.Is(err, delayq.ErrWrongState):
		return proto.ErrNotFound
	case errors.Is(err, delayq.ErrTooLarge):
		return proto.ErrJobTooBig
	case redis.IsOOMError(err):
		return proto.ErrOutOfMemory
	}
	return err
}

// Put implements proto.Backend.
func (b *Backend) Put(ctx context.Context, tube string, pri uint32, delay, ttr time.Duration, body []byte) (uint64, bool, error) {
	topic := topicOf(tube)
	if topic != tube {
		if err := b.st.SetBeanstalkdTube(ctx, topic, tube); err != nil {
			return 0, false, storeError(err)
		}
	}
	id, ok := b.issuer.Do(ctx, topic)
	if !ok {
		return 0, false, ctx.Err()
	}
	if id.err != nil {
		return 0, false, storeError(id.err)
	}
	n := id.n
	err := b.inside.EnqueueRanked(ctx, topic, core.RankedJob{
		ID: store.BeanstalkdJobID(n), Body: body, Pri: pri, Delay: delay, TTR: ttr,
	})
	if err != nil {
		wctx := context.WithoutCancel(ctx)
		_ = b.st.ForgetBeanstalkdID(wctx, n, store.BeanstalkdJob{Topic: topic, ID: store.BeanstalkdJobID(n)})
		// The issue counted a put; no job was made, and total-jobs counts jobs made.
		b.count(wctx, store.BeanstalkdTubeCounter(topic, "put"), -1)
		b.count(wctx, store.BeanstalkdPutCounter, -1)
		return 0, false, storeError(err)
	}
	if delay > 0 {
		b.setDelay(ctx, n, delay)
	}
	return n, false, nil
}

// idOf returns the beanstalkd id of a job: the one it was put with, or an alias issued the
// first time a beanstalkd client meets a job enqueued elsewhere.
func (b *Backend) idOf(ctx context.Context, j *delayq.Job) (uint64, error) {
	if n, ok := nativeID(j); ok {
		return n, nil
	}
	return b.st.BeanstalkdAlias(ctx, store.BeanstalkdJob{Topic: j.Topic, ID: j.ID})
}

// nativeID returns the beanstalkd id of a job put through the front end: its delayq id is the
// id in fixed width, and it has a beanstalkd priority.
func nativeID(j *delayq.Job) (uint64, bool) {
	if j.BeanstalkdPriority == nil || len(j.ID) != store.BeanstalkdIDWidth {
		return 0, false
	}
	n, err := strconv.ParseUint(j.ID, 10, 64)
	return n, err == nil
}

// find returns the job beanstalkd id n names, in its current state.
func (b *Backend) find(ctx context.Context, n uint64) (store.BeanstalkdJob, *delayq.Job, error) {
	ref, err := b.st.BeanstalkdLookup(ctx, n)
	if err != nil {
		return ref, nil, storeError(err)
	}
	j, err := b.c.Get(ctx, ref.Topic, ref.ID)
	if errors.Is(err, delayq.ErrNotFound) || errors.Is(err, delayq.ErrDone) {
		// Gone by another way (acked over HTTP, say): the id names nothing any more, even
		// while the job's own id stays taken for its unique_for.
		_ = b.st.ForgetBeanstalkdID(ctx, n, ref)
	}
	return ref, j, storeError(err)
}

func (b *Backend) protoJob(n uint64, j *delayq.Job) proto.Job {
	return proto.Job{ID: n, Body: j.Body, TTR: j.TTR}
}

// hold records that session s holds job n.
func (b *Backend) hold(s proto.Session, n uint64, j *delayq.Job) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.sessions[s]
	if m == nil {
		m = map[uint64]held{}
		b.sessions[s] = m
	}
	m[n] = held{job: store.BeanstalkdJob{Topic: j.Topic, ID: j.ID}, lease: j.Lease()}
}

// held returns the job n that s holds, and whether it does.
func (b *Backend) held(s proto.Session, n uint64) (held, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.sessions[s][n]
	return h, ok
}

// drop forgets that s holds n.
func (b *Backend) drop(s proto.Session, n uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.sessions[s], n)
}

// Delete implements proto.Backend.
func (b *Backend) Delete(ctx context.Context, s proto.Session, n uint64) error {
	if h, ok := b.held(s, n); ok {
		b.drop(s, n)
		err := b.c.Ack(ctx, h.lease)
		if err == nil {
			b.deleted(ctx, n, h.job)
			return nil
		}
		if !errors.Is(err, delayq.ErrLeaseLost) {
			return storeError(err)
		}
		// Its TTR passed: the job is ready (or delayed, or buried) again, and anyone may
		// delete it, as in beanstalkd; unless another connection holds it by now.
	}
	ref, j, err := b.find(ctx, n)
	if err != nil {
		return err
	}
	switch j.State {
	case delayq.StateReserved:
		return proto.ErrNotFound // another connection's
	case delayq.StateDead:
		k, err := b.c.DeleteDead(ctx, ref.Topic, []string{ref.ID})
		if err == nil && k == 0 {
			err = delayq.ErrNotFound
		}
		if err != nil {
			return storeError(err)
		}
	default:
		if err := b.c.Cancel(ctx, ref.Topic, ref.ID); err != nil {
			return storeError(err)
		}
	}
	b.deleted(ctx, n, ref)
	return nil
}

// deleted counts a delete in the job's tube and forgets its id.
func (b *Backend) deleted(ctx context.Context, n uint64, j store.BeanstalkdJob) {
	if err := b.st.BeanstalkdDeleted(ctx, n, j); err != nil {
		b.log.Warn("beanstalkd: forgetting a deleted job's id", "id", n, "err", err)
	}
}

// Release implements proto.Backend. A release with a delay is a snooze, the same operation as
// the HTTP API's and delayq.Client.Release's with a delay: the job counts a snooze, and one
// past its max_snoozes (which only a job enqueued over HTTP or in Go can have) is buried,
// as beanstalkd buries a job it cannot release.
func (b *Backend) Release(ctx context.Context, s proto.Session, n uint64, pri uint32, delay time.Duration) (bool, error) {
	h, ok := b.held(s, n)
	if !ok {
		return false, proto.ErrNotFound
	}
	b.drop(s, n)
	dead, err := b.inside.ReleaseRanked(ctx, lease(h), pri, delay)
	if err != nil {
		return false, storeError(err)
	}
	if dead {
		b.count(ctx, store.BeanstalkdJobCounter(n, "buries"), 1)
		if err := b.st.NoteBurial(ctx, n); err != nil {
			b.log.Warn("beanstalkd: noting a burial: kick may take it out of order", "id", n, "err", err)
		}
		return true, nil
	}
	b.count(ctx, store.BeanstalkdJobCounter(n, "releases"), 1)
	b.setDelay(ctx, n, delay)
	return false, nil
}

// setDelay keeps the delay job n was put or released with, which stats-job reports.
func (b *Backend) setDelay(ctx context.Context, n uint64, delay time.Duration) {
	if err := b.st.SetBeanstalkdCounter(ctx, store.BeanstalkdJobCounter(n, "delay"), uint64(delay/time.Second)); err != nil {
		b.log.Warn("beanstalkd: keeping a job's delay", "id", n, "err", err)
	}
}

// count adds to a counter of the stats documents; a failure only makes a statistic low.
func (b *Backend) count(ctx context.Context, counter string, delta int64) {
	if err := b.st.CountBeanstalkd(ctx, counter, delta); err != nil {
		b.log.Warn("beanstalkd: counting", "counter", counter, "err", err)
	}
}

// Bury implements proto.Backend.
func (b *Backend) Bury(ctx context.Context, s proto.Session, n uint64, pri uint32) error {
	h, ok := b.held(s, n)
	if !ok {
		return proto.ErrNotFound
	}
	b.drop(s, n)
	if err := b.inside.BuryRanked(ctx, lease(h), pri); err != nil {
		return storeError(err)
	}
	b.count(ctx, store.BeanstalkdJobCounter(n, "buries"), 1)
	if err := b.st.NoteBurial(ctx, n); err != nil {
		b.log.Warn("beanstalkd: noting a burial: kick may take it out of order", "id", n, "err", err)
	}
	return nil
}

func lease(h held) core.Lease {
	return core.Lease{Topic: h.lease.Topic, ID: h.lease.ID, Token: h.lease.Token}
}

// Touch implements proto.Backend.
func (b *Backend) Touch(ctx context.Context, s proto.Session, n uint64) error {
	h, ok := b.held(s, n)
	if !ok {
		return proto.ErrNotFound
	}
	_, err := b.c.Touch(ctx, h.lease, 0)
	if err != nil {
		b.drop(s, n)
	}
	return storeError(err)
}

// Disconnect implements proto.Backend: the jobs s still holds are ready again, in their place.
func (b *Backend) Disconnect(ctx context.Context, s proto.Session) error {
	b.mu.Lock()
	jobs := b.sessions[s]
	delete(b.sessions, s)
	b.mu.Unlock()
	var errs []error
	for n, h := range jobs {
		_, err := b.c.Release(ctx, h.lease, delayq.ReleaseOptions{})
		if err == nil {
			// The reserve counts, as a release's does, though no release was asked for.
			b.count(ctx, store.BeanstalkdJobCounter(n, "returns"), 1)
		} else if !errors.Is(err, delayq.ErrLeaseLost) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Peek implements proto.Backend.
func (b *Backend) Peek(ctx context.Context, n uint64) (proto.Job, error) {
	_, j, err := b.find(ctx, n)
	if err != nil {
		return proto.Job{}, err
	}
	return b.protoJob(n, j), nil
}

// before tells whether due job a goes out before due job b.
func (b *Backend) before(x, y *delayq.Job) bool { return b.inside.ReadyOrder(x, y) < 0 }
