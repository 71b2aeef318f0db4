package delayq

import (
	"errors"
	"sync"
	"time"

	"github.com/delayq/delayq/internal/testhooks"
	"github.com/delayq/delayq/internal/wake"
)

// clockMu makes each move of a Client's clock one read and one write of its offset, so that
// moves made at the same time add up.
var clockMu sync.Mutex

// advanceClock moves the clock every script of c sees forward by d (tests only), and what c
// plans by that clock with it: its consumers wake for what the move made due, and the leases
// the move passed expire at once.
func (c *Client) advanceClock(d time.Duration) {
	clockMu.Lock()
	defer clockMu.Unlock()
	ms := d.Milliseconds()
	c.store.SetClockOffset(c.store.ClockOffset() + ms)
	c.mu.Lock()
	topics := make([]*wake.Topic, 0, len(c.topics))
	for _, t := range c.topics {
		topics = append(topics, t)
	}
	c.mu.Unlock()
	for _, t := range topics {
		t.ShiftClock(ms)
	}
	c.leases.ShiftClock(ms)
}

func init() {
	testhooks.AdvanceClock = func(client any, d time.Duration) {
		client.(*Client).advanceClock(d)
	}
	testhooks.ClockOffset = func(client any) time.Duration {
		return time.Duration(client.(*Client).store.ClockOffset()) * time.Millisecond
	}
	testhooks.MaxPage = func(client any) int { return client.(*Client).cfg.Limits.MaxReserve }
	// The same reading of a handler's error as Worker.finish makes.
	testhooks.Failure = func(err error) (*time.Duration, bool) {
		var he *handlerError
		if errors.As(err, &he) {
			return he.delay, he.dead
		}
		return nil, false
	}
}
