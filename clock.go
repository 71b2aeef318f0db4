package delayq

import (
	"sync"
	"time"

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
