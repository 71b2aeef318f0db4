package delayq

import (
	"context"
	"errors"
	"time"

	"github.com/delayq/delayq/internal/core"
	"github.com/delayq/delayq/internal/store"
)

// Core returns what delayq's own packages (package archive, package delayqtest, and the
// server's HTTP API, dashboard and beanstalkd front end) use of c beyond its public API. It is
// for them alone and outside delayq's compatibility promise: the one key it accepts is in an
// internal package, and it panics with any other.
func (c *Client) Core(k core.Key) core.Client[*Job] {
	if k != core.Pass {
		panic("delayq: Client.Core is for delayq's own packages")
	}
	return inside{c}
}

// inside is c as package core sees it. beanstalkd.go holds its beanstalkd methods.
type inside struct{ c *Client }

func (in inside) Store() *store.Store { return in.c.store }

func (in inside) ReadArchiveSetting(ctx context.Context) error {
	return in.c.readArchiveSetting(ctx)
}

func (in inside) AdvanceClock(d time.Duration) { in.c.advanceClock(d) }

func (in inside) ClockOffset() time.Duration {
	return time.Duration(in.c.store.ClockOffset()) * time.Millisecond
}

func (in inside) MaxPage() int { return in.c.cfg.Limits.MaxReserve }

// Snoozed reads a handler's error as Worker.finish does.
func (inside) Snoozed(err error) (time.Duration, bool) {
	var he *handlerError
	if errors.As(err, &he) && he.snooze {
		return *he.delay, true
	}
	return 0, false
}

// Failure reads a handler's error as Worker.finish does.
func (inside) Failure(err error) (*time.Duration, bool) {
	var he *handlerError
	if errors.As(err, &he) {
		return he.delay, he.dead
	}
	return nil, false
}
