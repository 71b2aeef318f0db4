package delayq

import (
	"errors"
	"sync"
	"time"

	"github.com/delayq/delayq/internal/testhooks"
)

// clockMu makes each move of a Client's clock one read and one write of its offset, so that
// moves made at the same time add up.
var clockMu sync.Mutex

func init() {
	testhooks.AdvanceClock = func(client any, d time.Duration) {
		c := client.(*Client)
		clockMu.Lock()
		defer clockMu.Unlock()
		c.store.SetClockOffset(c.store.ClockOffset() + d.Milliseconds())
		c.leases.Recheck() // the leases the move passed expire at once
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
