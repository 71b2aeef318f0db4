// Package shardsub subscribes to any number of Redis Cluster shard channels
// (SSUBSCRIBE) over one connection per primary, and keeps them subscribed
// across reconnects, node restarts, failovers and slot migrations.
//
// go-redis's ClusterClient.SSubscribe cannot do this: its PubSub is bound to
// the node of its first channel's slot, and after a reconnect it resubscribes
// all its channels in one SSUBSCRIBE, which Redis refuses with CROSSSLOT as
// soon as they span slots. The PubSub then stays connected but subscribed to
// nothing. So this package uses go-redis only for the connection to each
// primary (a PubSub of the primary's node client), sends one SSUBSCRIBE per
// channel, matches each reply to its command, and replaces a broken
// connection itself after looking up the channels' owners again.
//
// A router goroutine routes each channel to its primary's connection by the
// cluster client's slot map; every connection has a writer goroutine (the
// only one sending commands) and a reader goroutine (the only one making
// callbacks for its channels). Faults all end the same way: the channels
// concerned report Lost if they were subscribed, the slot map is reloaded,
// and the router subscribes them again on whatever primary serves them by
// then, after a backoff that doubles from 25ms to 2s with each failure:
//
//   - a connection that breaks, or does not answer a PING after 5s of
//     silence (a stalled or unreachable node), gives up all its channels;
//   - an SSUBSCRIBE refused with an error reply (MOVED or ASK from an
//     out-of-date slot map, CLUSTERDOWN, ...) gives up its channel only;
//   - a slot moving away from a node makes Redis unsubscribe its channels
//     there, unasked: those channels move;
//   - a node that says it is no longer a primary, checked with ROLE before
//     each batch of SSUBSCRIBEs and every 5s, gives up all its channels: a
//     Redis 7 replica accepts SSUBSCRIBE for its primary's slots, so an
//     out-of-date slot map after a failover would leave them on a replica.
//
// A connection left without channels is closed.
package shardsub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// EventKind says what an Event reports.
type EventKind int

const (
	// Message is a message published on Channel; Payload holds it.
	Message EventKind = iota + 1
	// Subscribed reports that Channel is subscribed, for the first time or
	// again: messages published from now on are delivered, anything published
	// before may have been missed.
	Subscribed
	// Lost reports that Channel's subscription ended, because its connection
	// broke or its slot moved to another primary. Messages published until
	// Channel reports Subscribed again may be missed. The Subscriber
	// resubscribes it on its own.
	Lost
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case Message:
		return "Message"
	case Subscribed:
		return "Subscribed"
	case Lost:
		return "Lost"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is what a Subscriber reports to its callback. For each channel the
// events come in the order Subscribed, any number of Messages, Lost,
// Subscribed, and so on.
type Event struct {
	Kind    EventKind
	Channel string
	// Payload is the message of a Message event, empty otherwise.
	Payload string
}

// ErrClosed is returned by Subscribe after Close.
var ErrClosed = errors.New("shardsub: subscriber closed")

// timing holds the Subscriber's intervals; tests shorten them.
type timing struct {
	// health is how long a connection may stay silent before it is sent a
	// PING; with no answer within another health it counts as broken.
	health time.Duration
	// minBackoff and maxBackoff bound the wait before a channel's next
	// subscription attempt, which doubles with each failure in a row.
	minBackoff, maxBackoff time.Duration
}

var defaultTiming = timing{
	health:     5 * time.Second,
	minBackoff: 25 * time.Millisecond,
	maxBackoff: 2 * time.Second,
}

// Subscriber holds one sharded pub/sub connection per primary of a Redis
// Cluster, shared by all channels whose slots that primary serves.
//
// Its methods are safe for concurrent use.
type Subscriber struct {
	cc  *redis.ClusterClient
	log *slog.Logger
	on  func(Event)
	tm  timing

	ctx    context.Context // canceled by Close: ends dials and lookups
	cancel context.CancelFunc
	kick   chan struct{}  // capacity 1: wakes the router
	wg     sync.WaitGroup // the router and every conn's two goroutines

	mu      sync.Mutex
	closed  bool
	chans   map[string]*channel
	conns   map[string]*conn // the live connection of each primary address
	changed chan struct{}    // closed (and replaced) when a channel is subscribed, and by Close
	lastErr error            // the latest failure, for Subscribe's error
}

// channel is the state of one subscribed channel.
type channel struct {
	conn       *conn // the connection it is routed to; nil while waiting for the router
	subscribed bool  // Subscribed has been reported and no Lost since
	failures   int   // failed attempts since it was last subscribed
	retryAt    time.Time
}

// New returns a Subscriber that subscribes through cc's primaries and
// reports every event to on. on is called from the Subscriber's own
// goroutines, one per primary, so calls may run concurrently, but those for
// one channel never overlap. A slow on holds up its primary's messages; on
// must not call Subscribe or Close. log may be nil.
func New(cc *redis.ClusterClient, log *slog.Logger, on func(Event)) *Subscriber {
	return newSubscriber(cc, log, on, defaultTiming)
}

func newSubscriber(cc *redis.ClusterClient, log *slog.Logger, on func(Event), tm timing) *Subscriber {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Subscriber{
		cc:      cc,
		log:     log,
		on:      on,
		tm:      tm,
		ctx:     ctx,
		cancel:  cancel,
		kick:    make(chan struct{}, 1),
		chans:   map[string]*channel{},
		conns:   map[string]*conn{},
		changed: make(chan struct{}),
	}
	s.wg.Add(1)
	go s.route()
	return s
}

// Subscribe adds channels to the subscription; channels already added are
// left as they are. It returns once every one of them is subscribed (its
// Subscribed event has been delivered), or with an error when ctx ends
// first. Either way the channels stay added and are retried until Close.
func (s *Subscriber) Subscribe(ctx context.Context, channels ...string) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	for _, ch := range channels {
		if s.chans[ch] == nil {
			s.chans[ch] = &channel{}
		}
	}
	s.mu.Unlock()
	s.wakeRouter()

	for {
		s.mu.Lock()
		closed, changed, missing := s.closed, s.changed, s.missingLocked(channels)
		s.mu.Unlock()
		switch {
		case closed:
			return ErrClosed
		case missing == 0:
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			s.mu.Lock()
			missing, lastErr := s.missingLocked(channels), s.lastErr
			s.mu.Unlock()
			return fmt.Errorf("shardsub: %d of %d channels not subscribed (last failure: %v): %w",
				missing, len(channels), lastErr, ctx.Err())
		}
	}
}

// missingLocked returns how many of channels are not subscribed.
func (s *Subscriber) missingLocked(channels []string) int {
	n := 0
	for _, name := range channels {
		if !s.chans[name].subscribed {
			n++
		}
	}
	return n
}

// Close closes every connection, stops every goroutine of the Subscriber and
// waits for them; no event is reported after it returns. A connection that
// is still being set up to a stalled node may hold it up for the node
// client's read timeout. Calling Close again does nothing.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.changed)
	}
	conns := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	// Cancel first: a conn's PubSub holds its lock while dialing.
	s.cancel()
	for _, c := range conns {
		_ = c.ps.Close()
	}
	s.wg.Wait()
	return nil
}

func (s *Subscriber) wakeRouter() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// route gives each channel that waits for it, once its backoff has passed,
// to the connection of the primary that serves its slot.
func (s *Subscriber) route() {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		due, next := s.due(time.Now())
		if len(due) > 0 {
			s.assign(due)
			continue
		}
		if !next.IsZero() {
			timer.Reset(time.Until(next))
		}
		select {
		case <-s.ctx.Done():
			return
		case <-s.kick:
		case <-timer.C:
		}
	}
}

// due returns the channels waiting for the router whose retry time has
// come, and the earliest retry time of the others (zero if none).
func (s *Subscriber) due(now time.Time) (due []string, next time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, time.Time{}
	}
	for name, ch := range s.chans {
		switch {
		case ch.conn != nil:
		case !ch.retryAt.After(now):
			due = append(due, name)
		case next.IsZero() || ch.retryAt.Before(next):
			next = ch.retryAt
		}
	}
	return due, next
}

// assign looks up the primary of each channel in the cluster client's slot
// map and hands the channel to that primary's connection, opening it if
// there is none.
func (s *Subscriber) assign(due []string) {
	type group struct {
		client *redis.Client
		chans  []string
	}
	byAddr := map[string]*group{}
	for i, name := range due {
		client, err := s.cc.MasterForKey(s.ctx, name)
		if err != nil {
			// The slot map could not be loaded: the other channels
			// would fail the same way, each after trying every node.
			s.mu.Lock()
			s.requeueLocked(due[i:], nil, fmt.Errorf("shardsub: find the primary of %s: %w", name, err))
			s.mu.Unlock()
			break
		}
		addr := client.Options().Addr
		if byAddr[addr] == nil {
			byAddr[addr] = &group{client: client}
		}
		byAddr[addr].chans = append(byAddr[addr].chans, name)
	}
	for addr, g := range byAddr {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		c := s.conns[addr]
		if c == nil {
			c = s.openLocked(addr, g.client)
		}
		for _, name := range g.chans {
			if ch := s.chans[name]; ch.conn == nil {
				ch.conn = c
				c.chans[name] = struct{}{}
				c.unsent = append(c.unsent, name)
			}
		}
		s.mu.Unlock()
		c.wakeWriter()
	}
}

// requeueLocked takes the named channels that are on connection from (nil:
// on none) off it and gives them back to the router, to retry after a
// backoff. Channels requeued together keep one retry time, so that they
// stay on one new connection instead of spreading over many attempts.
func (s *Subscriber) requeueLocked(names []string, from *conn, cause error) {
	var chans []*channel
	failures := 0
	for _, name := range names {
		if ch := s.chans[name]; ch != nil && ch.conn == from {
			chans = append(chans, ch)
			failures = max(failures, ch.failures+1)
			if from != nil {
				delete(from.chans, name)
			}
		}
	}
	retryAt := time.Now().Add(s.backoff(failures))
	for _, ch := range chans {
		ch.conn = nil
		ch.subscribed = false
		ch.failures = failures
		ch.retryAt = retryAt
	}
	s.lastErr = cause
}

// backoff returns the wait before attempt n+1 after n failures in a row:
// minBackoff doubled n-1 times, at most maxBackoff, plus up to half of that
// at random so that many clients do not retry in step.
func (s *Subscriber) backoff(n int) time.Duration {
	d := s.tm.maxBackoff
	if n < 20 {
		d = min(d, s.tm.minBackoff<<(n-1))
	}
	return d + rand.N(d/2+1)
}

// markSubscribed records that name is subscribed on c, unless it has left c
// meanwhile, and wakes the Subscribe calls waiting for it.
func (s *Subscriber) markSubscribed(name string, c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.chans[name]
	if ch.conn != c || c.dead || s.closed {
		return
	}
	ch.subscribed = true
	ch.failures = 0
	close(s.changed)
	s.changed = make(chan struct{})
}
