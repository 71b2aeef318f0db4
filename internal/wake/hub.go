package wake

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/shardsub"
	"github.com/delayq/delayq/internal/store"
)

// Hub turns the partitions' shard pub/sub messages into wake-ups of the topic states that
// wait on them. A Client holds one Hub: one subscription for every topic and lane — one
// connection — and on a Cluster one connection per shard (internal/shardsub), whatever the
// number of channels.
type Hub struct {
	rdb       redis.UniversalClient
	log       *slog.Logger
	newTopics string // the channel of topic registrations

	// closeMu orders Close against subscribe: Close either sees the goroutines subscribe
	// started in its wait, or they never start.
	closeMu sync.Mutex
	closed  bool
	stop    chan struct{}
	wg      sync.WaitGroup

	mu        sync.Mutex
	targets   map[string][]target  // channel → the states and partitions it wakes
	confirmed map[string]bool      // channels whose subscription Redis has confirmed
	shared    *redis.PubSub        // the one subscription, when not on a Cluster
	shards    *shardsub.Subscriber // the subscriptions on a Cluster, one per shard
}

// target is one partition of one topic state, or with p = -1 a topic state waiting for its
// topic to be registered; or, with l set, partition lk of a topic whose leases the process
// expires, or with p = -1 a Leases taking on every topic registered.
type target struct {
	t  *Topic
	l  *Leases
	lk leaseKey
	p  int
}

// NewHub returns a Hub subscribing through rdb; newTopics is the channel on which topic
// registrations are announced.
func NewHub(rdb redis.UniversalClient, log *slog.Logger, newTopics string) *Hub {
	return &Hub{
		rdb: rdb, log: log, newTopics: newTopics, stop: make(chan struct{}),
		targets: map[string][]target{}, confirmed: map[string]bool{},
	}
}

// subscribed tells tg that its channel's subscription is confirmed: from now on it hears
// the notices, and what was published before went unheard.
func (tg target) subscribed() {
	if tg.t != nil && tg.p >= 0 {
		tg.t.subscribed(tg.p)
		return
	}
	tg.wake()
}

// wake tells tg that something may have changed that no notice told of.
func (tg target) wake() {
	switch {
	case tg.l != nil && tg.p < 0:
		tg.l.missedRegistrations()
		return
	case tg.l != nil:
		tg.l.recheck(tg.lk)
		return
	}
	if tg.p < 0 {
		tg.t.Recheck(nil)
		return
	}
	tg.t.Recheck([]int{tg.p})
}

// Listen makes the notices of channels, the notify channels of t's partitions in order, wake t;
// once per topic state. It does nothing once the Hub is closed.
func (h *Hub) Listen(t *Topic, channels []string) {
	t.mu.Lock()
	if t.listening {
		t.mu.Unlock()
		return
	}
	t.listening = true
	t.mu.Unlock()
	targets := make([]target, len(channels))
	for p := range channels {
		targets[p] = target{t: t, p: p}
	}
	h.subscribe(channels, targets)
}

// ListenLeases makes the lease notices of channels[k] reach l's partition parts[k] of topic.
func (h *Hub) ListenLeases(l *Leases, topic string, parts []int, channels []string) {
	targets := make([]target, len(channels))
	for k := range channels {
		targets[k] = target{l: l, lk: leaseKey{topic, parts[k]}}
	}
	h.subscribe(channels, targets)
}

// UnlistenLeases undoes ListenLeases for l's partitions parts of topic, whose channels are
// channels: a channel nobody else listens to is unsubscribed (on a Cluster it stays
// subscribed, its messages heard by nobody, until the Hub closes).
func (h *Hub) UnlistenLeases(l *Leases, topic string, parts []int, channels []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var idle []string
	for k, ch := range channels {
		var kept []target // a new slice: targetsOf's callers may be reading the old one
		for _, tg := range h.targets[ch] {
			if tg.l != l || tg.lk != (leaseKey{topic, parts[k]}) {
				kept = append(kept, tg)
			}
		}
		if len(kept) == 0 {
			delete(h.targets, ch)
			idle = append(idle, ch)
			continue
		}
		h.targets[ch] = kept
	}
	if len(idle) > 0 && h.shared != nil {
		// On a Cluster the subscriptions stay, and stay confirmed.
		for _, ch := range idle {
			delete(h.confirmed, ch)
		}
		// The subscription subscribes what is missing again when it reconnects, so a failure
		// here leaves a channel heard by nobody until then.
		_ = h.shared.SUnsubscribe(context.Background(), idle...)
	}
}

// AwaitTopics makes every topic registration reach l (Leases.TakeRegistered); once per l.
func (h *Hub) AwaitTopics(l *Leases) {
	h.subscribe([]string{h.newTopics}, []target{{l: l, p: -1}})
}

// subscribe makes messages on channels[i] reach targets[i], subscribing to the channels nobody
// listened to yet.
func (h *Hub) subscribe(channels []string, targets []target) {
	h.closeMu.Lock()
	defer h.closeMu.Unlock()
	if h.closed {
		return
	}
	// A target that joins a channel subscribed already hears what is published from now on,
	// but no (re)subscription will tell it that what came before went unheard: it looks at
	// once, as the subscription's confirmation makes the first targets do. (After h.mu.)
	var joined, heard []target
	defer func() {
		for _, tg := range joined {
			tg.wake()
		}
		for _, tg := range heard {
			tg.subscribed()
		}
	}()
	h.mu.Lock()
	defer h.mu.Unlock()
	var fresh []string
	for i, ch := range channels {
		switch {
		case len(h.targets[ch]) == 0:
			fresh = append(fresh, ch)
		case h.confirmed[ch]:
			heard = append(heard, targets[i])
		default:
			joined = append(joined, targets[i]) // the confirmation to come tells it again
		}
		h.targets[ch] = append(h.targets[ch], targets[i])
	}
	if len(fresh) == 0 {
		return
	}
	if cc, cluster := h.rdb.(*redis.ClusterClient); cluster {
		if h.shards == nil {
			h.shards = shardsub.New(cc, h.log, h.onShardEvent)
		}
		// Subscribe waits for the subscriptions; they stay wanted, and are retried, if it fails.
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := h.shards.Subscribe(ctx, fresh...); err != nil && !errors.Is(err, shardsub.ErrClosed) {
				h.log.Warn("delayq: subscribing to wake-up notices; until then the periodic recheck covers them", "err", err)
			}
		}()
		return
	}
	if h.shared == nil {
		h.shared = h.rdb.SSubscribe(context.Background(), fresh...)
		h.wg.Add(1)
		go h.receive(h.shared)
		return
	}
	if err := h.shared.SSubscribe(context.Background(), fresh...); err != nil {
		// The subscription resubscribes every channel when it reconnects; until then the
		// periodic recheck covers these partitions.
		h.log.Warn("delayq: subscribing to wake-up notices", "err", err)
	}
}

// Await makes the registration of t's topic wake t; once per topic state.
func (h *Hub) Await(t *Topic) {
	t.mu.Lock()
	if t.awaiting {
		t.mu.Unlock()
		return
	}
	t.awaiting = true
	t.mu.Unlock()
	h.subscribe([]string{h.newTopics}, []target{{t: t, p: -1}})
}

// Forget stops waking t for the registration of its topic, and lets a later state of the same
// topic Await again. A state whose partitions are listened to is not forgotten.
func (h *Hub) Forget(t *Topic) {
	t.mu.Lock()
	awaiting := t.awaiting && !t.listening
	t.mu.Unlock()
	if !awaiting {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// A new slice: targetsOf's callers may be reading the old one.
	var kept []target
	for _, tg := range h.targets[h.newTopics] {
		if tg.l != nil || tg.t != t {
			kept = append(kept, tg)
		}
	}
	h.targets[h.newTopics] = kept
}

// Targets returns how many topic states and partitions the Hub wakes, for tests.
func (h *Hub) Targets() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, ts := range h.targets {
		n += len(ts)
	}
	return n
}

// onShardEvent takes an event of the Cluster's subscriptions.
func (h *Hub) onShardEvent(e shardsub.Event) {
	switch e.Kind {
	case shardsub.Subscribed:
		// (Re)subscribed: anything published before now went unheard.
		for _, tg := range h.confirm(e.Channel) {
			tg.subscribed()
		}
	case shardsub.Message:
		h.deliver(e.Channel, e.Payload)
	}
}

// deliver passes a message on channel to the states it wakes.
func (h *Hub) deliver(channel, payload string) {
	if channel == h.newTopics {
		for _, tg := range h.targetsOf(channel) {
			switch {
			case tg.l != nil:
				tg.l.registered(payload)
			case tg.t.Name == payload:
				tg.wake()
			}
		}
		return
	}
	if payload == controlsChanged {
		for _, tg := range h.targetsOf(channel) {
			if tg.t != nil {
				tg.wake()
			}
		}
		return
	}
	due, lane, ok := parseNotice(payload)
	if !ok {
		return
	}
	for _, tg := range h.targetsOf(channel) {
		switch {
		case lane == laneLease && tg.l != nil:
			tg.l.notice(tg.lk, due)
		case lane != laneLease && tg.t != nil:
			tg.t.Notice(tg.p, lane, due)
		}
	}
}

// Close ends every subscription and waits for the goroutines that read them.
func (h *Hub) Close() {
	h.closeMu.Lock()
	if h.closed {
		h.closeMu.Unlock()
		return
	}
	h.closed = true
	close(h.stop)
	h.closeMu.Unlock()
	h.mu.Lock()
	shards := h.shards
	h.mu.Unlock()
	if shards != nil {
		_ = shards.Close()
	}
	h.wg.Wait()
}

// receive reads one subscription until the Hub closes.
func (h *Hub) receive(ps *redis.PubSub) {
	defer h.wg.Done()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-h.stop:
		case <-done:
		}
		ps.Close()
	}()
	for {
		msg, err := ps.Receive(context.Background())
		if err != nil {
			select {
			case <-h.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			// Notices may have been lost while the connection was down, and no channel is
			// subscribed until the subscription's confirmations come again.
			h.unconfirmAll()
			h.recheckAll()
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind != "ssubscribe" && m.Kind != "subscribe" {
				continue // an unsubscription's confirmation
			}
			// (Re)subscribed: anything published before now went unheard.
			for _, tg := range h.confirm(m.Channel) {
				tg.subscribed()
			}
		case *redis.Message:
			h.deliver(m.Channel, m.Payload)
		}
	}
}

// unconfirmAll forgets every confirmation, the shared subscription's connection having broken.
func (h *Hub) unconfirmAll() {
	h.mu.Lock()
	clear(h.confirmed)
	var all []target
	for _, ts := range h.targets {
		all = append(all, ts...)
	}
	h.mu.Unlock()
	for _, tg := range all {
		if tg.t != nil && tg.p >= 0 {
			tg.t.unsubscribed(tg.p)
		}
	}
}

// confirm records that Redis confirmed the subscription to channel and returns its targets.
func (h *Hub) confirm(channel string) []target {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.targets[channel]) > 0 {
		h.confirmed[channel] = true
	}
	return h.targets[channel]
}

func (h *Hub) targetsOf(channel string) []target {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.targets[channel]
}

func (h *Hub) recheckAll() {
	h.mu.Lock()
	var all []target
	for _, ts := range h.targets {
		all = append(all, ts...)
	}
	h.mu.Unlock()
	for _, tg := range all {
		tg.wake()
	}
}

// controlsChanged is the notice of a partition whose topic's controls changed (a resume, new
// limits, a delete): every consumer waiting on it looks again (lib_controls.lua's
// CONTROLS_CHANGED).
const controlsChanged = "controls"

// laneLease is what parseNotice answers for a lease's notice, which is no lane's.
const laneLease store.Lane = "lease"

// parseNotice reads a notice's payload: "<due ms>" for the pull lane, "<due ms> push" for the
// push lane (lib.lua's notify_if_sooner), "<deadline ms> lease" for a lease (announce_lease).
func parseNotice(payload string) (dueMs int64, lane store.Lane, ok bool) {
	ms, kind, _ := strings.Cut(payload, " ")
	due, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return 0, "", false
	}
	switch kind {
	case "":
		return due, store.LanePull, true
	case "push":
		return due, store.LanePush, true
	case "lease":
		return due, laneLease, true
	}
	return 0, "", false
}
