package delayqtest

import (
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/core"
)

// AdvanceClock moves the clock that client's operations read forward by d, to the
// millisecond, for tests only. delayq's due times, retries and lease deadlines follow the
// Redis server's clock; AdvanceClock does not touch the server: it adds d to the time every
// operation of this Client reads from it. So after AdvanceClock(client, time.Hour) a job
// enqueued with a delay of an hour is due for client's Reserve, its Workers (also one already
// waiting) and Drain at once, a lease of a topic client consumes whose TTR the move passed
// expires at once (client expires the leases of the topics it consumes, as every Client does),
// and client's new jobs are stamped an hour ahead. Other Clients, on the same Redis or not,
// keep the server's clock and do not see the move; Redis's own expiries (call records kept for
// replays) do not see it either. The moves of one Client add up; a negative d moves its clock
// back.
func AdvanceClock(client *delayq.Client, d time.Duration) {
	client.Core(core.Pass).AdvanceClock(d)
}

// ClockOffset returns how far AdvanceClock has moved client's clock in all.
func ClockOffset(client *delayq.Client) time.Duration {
	return client.Core(core.Pass).ClockOffset()
}
