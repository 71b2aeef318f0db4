package shardsub

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// errSlotMoved is the cause recorded for a channel whose primary
// unsubscribed it because its slot went to another node.
var errSlotMoved = errors.New("shardsub: the channel's slot moved to another primary")

// errNotPrimary ends a conn to a node that has become a replica.
var errNotPrimary = errors.New("not a primary")

// errIdle ends a conn that has no channels left.
var errIdle = errors.New("no channels left")

// conn is one sharded pub/sub connection to a primary. Its writer sends the
// SSUBSCRIBE commands and PINGs, its reader handles the replies and
// messages. A conn lives until its connection breaks or the Subscriber
// closes; a broken conn gives its channels back to the router, which opens
// a new conn for them, on whichever primaries now serve their slots.
type conn struct {
	s      *Subscriber
	addr   string
	client *redis.Client // the node client, for ROLE
	ps     *redis.PubSub
	wake   chan struct{} // capacity 1: wakes the writer
	up     chan struct{} // closed by the writer once it has tried to connect (even if Close canceled that)
	stop   chan struct{} // closed when the reader ends; ends the writer

	// Guarded by s.mu.
	chans  map[string]struct{} // the channels routed here
	unsent []string            // channels to send SSUBSCRIBE for, in order
	sent   []string            // channels whose SSUBSCRIBE awaits its reply, in order sent
	ping   bool                // the reader wants a PING sent
	dead   bool                // the reader has ended
	err    error               // why the writer closed the connection
}

// openLocked starts a conn to the primary at addr and registers it.
func (s *Subscriber) openLocked(addr string, client *redis.Client) *conn {
	c := &conn{
		s:      s,
		addr:   addr,
		client: client,
		ps:     client.SSubscribe(s.ctx), // no channels: does no I/O yet
		wake:   make(chan struct{}, 1),
		up:     make(chan struct{}),
		stop:   make(chan struct{}),
		chans:  map[string]struct{}{},
	}
	s.conns[addr] = c
	s.wg.Add(2)
	go c.write()
	go c.read()
	return c
}

func (c *conn) wakeWriter() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// write connects, then sends one SSUBSCRIBE per channel handed to the conn
// (one per command keeps every command within one slot) and the PINGs the
// reader asks for. It is the only goroutine writing to the connection, so
// c.sent lists the commands in the order Redis answers them.
//
// Before each batch of commands, and every health interval, it checks that
// the node is still a primary: a Redis 7 replica accepts SSUBSCRIBE for
// its primary's slots, so a subscription sent on an out-of-date slot map
// to a demoted primary would stay there.
func (c *conn) write() {
	defer c.s.wg.Done()
	// The PING makes the PubSub dial, which the reader cannot do: it would
	// take a dial timeout for a read timeout.
	err := c.ps.Ping(c.s.ctx)
	close(c.up)
	if err != nil {
		c.fail(err)
		return
	}
	tick := time.NewTicker(c.s.tm.health)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.wake:
		case <-tick.C:
		}
		if err := c.checkPrimary(); err != nil {
			c.fail(err)
			return
		}
		for {
			name, ping, ok := c.next()
			if !ok {
				break
			}
			if ping {
				err = c.ps.Ping(c.s.ctx)
			} else {
				err = c.ps.SSubscribe(c.s.ctx, name)
			}
			if err != nil {
				c.fail(err)
				return
			}
		}
	}
}

// checkPrimary returns an error if the node says it is not a primary. It
// ignores a failure to ask: a broken connection is the reader's to find.
func (c *conn) checkPrimary() error {
	role, err := c.client.Do(c.s.ctx, "ROLE").Slice()
	if err != nil || len(role) == 0 || role[0] == "master" {
		return nil
	}
	return fmt.Errorf("%w: ROLE is %v", errNotPrimary, role[0])
}

// next returns the next command to send: a channel to subscribe, or ping.
// ok is false when there is nothing to send or the conn is dead.
func (c *conn) next() (name string, ping, ok bool) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	switch {
	case c.dead:
		return "", false, false
	case c.ping:
		c.ping = false
		return "", true, true
	}
	for len(c.unsent) > 0 {
		name, c.unsent = c.unsent[0], c.unsent[1:]
		if _, ok := c.chans[name]; ok {
			c.sent = append(c.sent, name)
			return name, false, true
		}
	}
	return "", false, false
}

// fail closes the connection after a failed write, which ends the reader.
// go-redis has by then reconnected the PubSub and resubscribed all its
// channels in one SSUBSCRIBE; closing it discards that connection too.
func (c *conn) fail(err error) {
	c.s.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.s.mu.Unlock()
	_ = c.ps.Close()
}

// read handles what the primary sends until the connection breaks, then
// hands the conn's channels back to the router.
func (c *conn) read() {
	defer c.s.wg.Done()
	<-c.up
	c.die(c.receive())
}

// receive reads replies and messages until the connection breaks or turns
// out to be unusable, and returns why.
func (c *conn) receive() error {
	pinged := false
	for {
		msg, err := c.ps.ReceiveTimeout(c.s.ctx, c.s.tm.health)
		var netErr net.Error
		var redisErr redis.Error
		switch {
		case err == nil:
		case errors.As(err, &netErr) && netErr.Timeout():
			if pinged {
				return fmt.Errorf("no reply to PING within %v", c.s.tm.health)
			}
			pinged = true
			c.s.mu.Lock()
			c.ping = true
			c.s.mu.Unlock()
			c.wakeWriter()
			continue
		case errors.As(err, &redisErr):
			if err := c.rejected(err); err != nil {
				return err
			}
			if c.retireIfIdle() {
				return errIdle
			}
			continue
		default:
			return err
		}
		pinged = false
		switch msg := msg.(type) {
		case *redis.Message:
			c.deliver(msg)
		case *redis.Subscription:
			switch msg.Kind {
			case "ssubscribe":
				if err := c.subscribed(msg.Channel); err != nil {
					return err
				}
			case "sunsubscribe":
				// Redis sends this unasked when the slot leaves the node.
				c.unsubscribed(msg.Channel)
				if c.retireIfIdle() {
					return errIdle
				}
			default:
				return fmt.Errorf("unexpected %s reply for %s", msg.Kind, msg.Channel)
			}
		case *redis.Pong:
		default:
			return fmt.Errorf("unexpected %T", msg)
		}
	}
}

// subscribed handles the reply confirming the oldest SSUBSCRIBE.
func (c *conn) subscribed(name string) error {
	s := c.s
	s.mu.Lock()
	if len(c.sent) == 0 || c.sent[0] != name {
		s.mu.Unlock()
		return fmt.Errorf("unexpected ssubscribe reply for %s", name)
	}
	c.sent = c.sent[1:]
	ch := s.chans[name]
	report := ch.conn == c && !ch.subscribed
	s.mu.Unlock()
	if report {
		s.on(Event{Kind: Subscribed, Channel: name})
		s.markSubscribed(name, c)
	}
	return nil
}

// rejected handles an error reply to the oldest SSUBSCRIBE: its channel
// goes back to the router. It returns an error if the connection must be
// given up.
func (c *conn) rejected(err error) error {
	// go-redis replaces the connection itself on READONLY and on a MOVED
	// to the same address; CROSSSLOT can only answer its resubscription of
	// all channels at once. Either way this connection no longer has the
	// subscriptions the conn believes in.
	if redis.IsReadOnlyError(err) || redis.HasErrorPrefix(err, "CROSSSLOT") {
		return fmt.Errorf("connection replaced by go-redis: %w", err)
	}
	if addr, ok := redis.IsMovedError(err); ok && addr == c.addr {
		return fmt.Errorf("connection replaced by go-redis: %w", err)
	}
	s := c.s
	s.mu.Lock()
	if len(c.sent) == 0 {
		s.mu.Unlock()
		return fmt.Errorf("unexpected error reply: %w", err)
	}
	name := c.sent[0]
	c.sent = c.sent[1:]
	s.requeueLocked([]string{name}, c, fmt.Errorf("shardsub: SSUBSCRIBE %s on %s: %w", name, c.addr, err))
	s.mu.Unlock()
	s.log.Debug("shardsub: subscription refused", "channel", name, "addr", c.addr, "err", err)
	// A MOVED or ASK means the client's slot map is out of date.
	s.cc.ReloadState(s.ctx)
	s.wakeRouter()
	return nil
}

// unsubscribed handles an unsubscription Redis sent unasked: the channel's
// slot has gone to another node.
func (c *conn) unsubscribed(name string) {
	s := c.s
	s.mu.Lock()
	ch := s.chans[name]
	if ch == nil || ch.conn != c {
		s.mu.Unlock()
		return
	}
	lost := ch.subscribed
	ch.subscribed = false
	s.mu.Unlock()
	if lost {
		s.on(Event{Kind: Lost, Channel: name})
	}
	s.log.Debug("shardsub: channel's slot moved", "channel", name, "addr", c.addr)
	s.cc.ReloadState(s.ctx)
	s.mu.Lock()
	s.requeueLocked([]string{name}, c, errSlotMoved)
	s.mu.Unlock()
	s.wakeRouter()
}

// retireIfIdle takes the conn out of service if it has no channels left,
// as happens to a primary that has lost all its slots (a manual failover
// makes it a replica, but leaves the connection open). Once it is out,
// the router opens a new conn for new channels of that address.
func (c *conn) retireIfIdle() bool {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if len(c.chans) > 0 {
		return false
	}
	c.dead = true
	if c.s.conns[c.addr] == c {
		delete(c.s.conns, c.addr)
	}
	return true
}

// deliver reports a message, unless its channel is no longer subscribed
// here: after an unsubscription the channel's next messages come with its
// next Subscribed event.
func (c *conn) deliver(msg *redis.Message) {
	s := c.s
	s.mu.Lock()
	ch := s.chans[msg.Channel]
	ok := ch != nil && ch.conn == c && ch.subscribed
	s.mu.Unlock()
	if ok {
		s.on(Event{Kind: Message, Channel: msg.Channel, Payload: msg.Payload})
	}
}

// die closes the conn, reports Lost for its subscribed channels and gives
// all its channels back to the router, which looks up their primaries
// again after a backoff. During Close it only closes the conn.
func (c *conn) die(cause error) {
	s := c.s
	s.mu.Lock()
	c.dead = true
	if s.conns[c.addr] == c {
		delete(s.conns, c.addr)
	}
	if c.err != nil {
		cause = c.err
	}
	closing := s.closed
	var names, lost []string
	for name := range c.chans {
		names = append(names, name)
		if ch := s.chans[name]; ch.subscribed {
			ch.subscribed = false
			lost = append(lost, name)
		}
	}
	s.mu.Unlock()
	close(c.stop)
	_ = c.ps.Close()
	switch {
	case closing:
		return
	case errors.Is(cause, errIdle):
		s.log.Debug("shardsub: connection closed: no channels left", "addr", c.addr)
		return
	case len(lost) > 0:
		s.log.Warn("shardsub: connection lost; resubscribing", "addr", c.addr, "channels", len(lost), "err", cause)
	default:
		s.log.Debug("shardsub: connection failed; retrying", "addr", c.addr, "channels", len(names), "err", cause)
	}
	for _, name := range lost {
		s.on(Event{Kind: Lost, Channel: name})
	}
	// The primary may have failed over: have the slot map read again
	// before the router looks the channels up.
	s.cc.ReloadState(s.ctx)
	cause = fmt.Errorf("shardsub: connection to %s: %w", c.addr, cause)
	s.mu.Lock()
	s.requeueLocked(names, c, cause)
	s.mu.Unlock()
	s.wakeRouter()
}
