// Package testhooks gives package delayqtest what it needs of a delayq.Client's insides
// without adding anything to delayq's public API. Package delayq sets the hooks in an init
// function; they take the Client as any because this package cannot import delayq, which
// imports it.
package testhooks

import "time"

var (
	// AdvanceClock moves the clock that client's scripts read forward by d.
	AdvanceClock func(client any, d time.Duration)
	// ClockOffset returns how far AdvanceClock has moved client's clock in all.
	ClockOffset func(client any) time.Duration
	// MaxPage returns the largest page client's listing calls take (its Limits.MaxReserve).
	MaxPage func(client any) int
	// Failure returns how a Worker nacks a job whose handler returned err: the delay before
	// the retry (nil: the job's backoff step) and whether the job goes dead at once.
	Failure func(err error) (delay *time.Duration, dead bool)
)
