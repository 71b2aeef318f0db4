package delayq

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/internal/keys"
	"github.com/delayq/delayq/internal/shardsub"
	"github.com/delayq/delayq/internal/store"
)

// notices turns the partitions' shard pub/sub messages into wake-ups of the topic states that
// wait on them. A Client holds one subscription for every topic and lane — one connection — and
// on a Cluster one connection per shard (internal/shardsub), whatever the number of channels.
type notices struct {
	c *Client

	mu      sync.Mutex
	targets map[string][]target  // channel → the states and partitions it wakes
	shared  *redis.PubSub        // the one subscription, when not on a Cluster
	shards  *shardsub.Subscriber // the subscriptions on a Cluster, one per shard
}

// target is one partition of one topic state, or with p = -1 a topic state waiting for its
// topic to be registered.
type target struct {
	t *topicState
	p int
}

// wake tells tg that something may have changed that no notice told of.
func (tg target) wake() {
	if tg.p < 0 {
		tg.t.recheck(nil)
		return
	}
	tg.t.recheck([]int{tg.p})
}

// listen makes notices of t's n partitions wake t; once per topic state. It does nothing when
// the Client polls instead, or is closed.
func (c *Client) listen(t *topicState, n int) {
	if c.cfg.PollInterval > 0 {
		return
	}
	t.mu.Lock()
	if t.listening {
		t.mu.Unlock()
		return
	}
	t.listening = true
	t.mu.Unlock()
	channels := make([]string, n)
	targets := make([]target, n)
	for p := range n {
		channels[p] = c.store.Partition(t.name, p).Notify()
		targets[p] = target{t, p}
	}
	c.subscribe(channels, targets)
}

// subscribe makes messages on channels[i] reach targets[i], subscribing to the channels nobody
// listened to yet.
func (c *Client) subscribe(channels []string, targets []target) {
	// Under c.mu, so that Close either sees the goroutines started here in its wait or they
	// never start.
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	h := &c.notices
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.targets == nil {
		h.c, h.targets = c, map[string][]target{}
	}
	var fresh []string
	for i, ch := range channels {
		if len(h.targets[ch]) == 0 {
			fresh = append(fresh, ch)
		}
		h.targets[ch] = append(h.targets[ch], targets[i])
	}
	if len(fresh) == 0 {
		return
	}
	if cc, cluster := c.store.Client().(*redis.ClusterClient); cluster {
		if h.shards == nil {
			h.shards = shardsub.New(cc, c.log, h.onShardEvent)
		}
		// Subscribe waits for the subscriptions; they stay wanted, and are retried, if it fails.
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := h.shards.Subscribe(ctx, fresh...); err != nil && !errors.Is(err, shardsub.ErrClosed) {
				c.log.Warn("delayq: subscribing to wake-up notices; until then the periodic recheck covers them", "err", err)
			}
		}()
		return
	}
	if h.shared == nil {
		h.shared = c.store.Client().SSubscribe(context.Background(), fresh...)
		c.wg.Add(1)
		go h.receive(h.shared)
		return
	}
	if err := h.shared.SSubscribe(context.Background(), fresh...); err != nil {
		// The subscription resubscribes every channel when it reconnects; until then the
		// periodic recheck covers these partitions.
		c.log.Warn("delayq: subscribing to wake-up notices", "err", err)
	}
}

// listenForTopics makes the registration of t's topic wake t; once per topic state.
func (c *Client) listenForTopics(t *topicState) {
	if c.cfg.PollInterval > 0 {
		return
	}
	t.mu.Lock()
	if t.awaiting {
		t.mu.Unlock()
		return
	}
	t.awaiting = true
	t.mu.Unlock()
	c.subscribe([]string{keys.NewTopics(c.cfg.Namespace)}, []target{{t, -1}})
}

// onShardEvent takes an event of the Cluster's subscriptions.
func (h *notices) onShardEvent(e shardsub.Event) {
	switch e.Kind {
	case shardsub.Subscribed:
		// (Re)subscribed: anything published before now went unheard.
		for _, tg := range h.targetsOf(e.Channel) {
			tg.wake()
		}
	case shardsub.Message:
		h.deliver(e.Channel, e.Payload)
	}
}

// deliver passes a message on channel to the states it wakes.
func (h *notices) deliver(channel, payload string) {
	if channel == keys.NewTopics(h.c.cfg.Namespace) {
		for _, tg := range h.targetsOf(channel) {
			if tg.t.name == payload {
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
		tg.t.notice(tg.p, lane, due)
	}
}

// close ends the Cluster's subscriptions.
func (h *notices) close() {
	h.mu.Lock()
	shards := h.shards
	h.mu.Unlock()
	if shards != nil {
		_ = shards.Close()
	}
}

// receive reads one subscription until the Client closes.
func (h *notices) receive(ps *redis.PubSub) {
	defer h.c.wg.Done()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-h.c.stop:
		case <-done:
		}
		ps.Close()
	}()
	for {
		msg, err := ps.Receive(context.Background())
		if err != nil {
			select {
			case <-h.c.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			// Notices may have been lost while the connection was down.
			h.recheckAll()
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			// (Re)subscribed: anything published before now went unheard.
			for _, tg := range h.targetsOf(m.Channel) {
				tg.wake()
			}
		case *redis.Message:
			h.deliver(m.Channel, m.Payload)
		}
	}
}

func (h *notices) targetsOf(channel string) []target {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.targets[channel]
}

func (h *notices) recheckAll() {
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

// parseNotice reads a notice's payload: "<due ms>" for the pull lane, "<due ms> push" for the
// push lane (lib.lua's notify_if_sooner).
func parseNotice(payload string) (dueMs int64, lane store.Lane, ok bool) {
	ms, push := strings.CutSuffix(payload, " push")
	due, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return 0, "", false
	}
	if push {
		return due, store.LanePush, true
	}
	return due, store.LanePull, true
}
