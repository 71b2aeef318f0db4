package beanstalkd

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/beanstalkd/proto"
)

// minTTR is the least time to run: beanstalkd raises a smaller one to a second.
const minTTR = time.Second

// jobCommand carries out a command that reaches the Backend.
func (c *conn) jobCommand(ctx context.Context, cmd proto.Command) error {
	b := c.srv.cfg.Backend
	switch cmd := cmd.(type) {
	case proto.Put:
		return c.put(ctx, cmd)
	case proto.Reserve:
		return c.reserve(ctx, -1)
	case proto.ReserveWithTimeout:
		return c.reserve(ctx, cmd.Timeout)
	case proto.ReserveJob:
		j, err := b.ReserveJob(ctx, c.session, cmd.ID)
		return c.replyReserved(j, err)
	case proto.Delete:
		return okOr(b.Delete(ctx, c.session, cmd.ID), func() { c.held.done(cmd.ID); c.w.Deleted() })
	case proto.Release:
		buried, err := b.Release(ctx, c.session, cmd.ID, cmd.Pri, cmd.Delay)
		if err == nil {
			c.held.done(cmd.ID)
		}
		if err == nil && buried {
			c.w.Buried()
			return nil
		}
		return okOr(err, c.w.Released)
	case proto.Bury:
		return okOr(b.Bury(ctx, c.session, cmd.ID, cmd.Pri), func() { c.held.done(cmd.ID); c.w.Buried() })
	case proto.Touch:
		return okOr(b.Touch(ctx, c.session, cmd.ID), func() { c.held.touched(cmd.ID, time.Now()); c.w.Touched() })
	case proto.Kick:
		n, err := b.Kick(ctx, c.used, cmd.Bound)
		return okOr(err, func() { c.w.Kicked(n) })
	case proto.KickJob:
		return okOr(b.KickJob(ctx, cmd.ID), c.w.KickedJob)
	case proto.Peek:
		j, err := b.Peek(ctx, cmd.ID)
		return c.replyJob(j, err, c.w.Found)
	case proto.PeekReady, proto.PeekDelayed, proto.PeekBuried:
		j, err := b.PeekState(ctx, c.used, peekState[cmd.Name()])
		return c.replyJob(j, err, c.w.Found)
	case proto.PauseTube:
		// A tube exists while a connection uses or watches it, or it holds jobs.
		if _, referenced := c.srv.tubes.count(cmd.Tube); !referenced {
			if _, err := b.StatsTube(ctx, cmd.Tube); err != nil {
				return err
			}
		}
		return okOr(b.PauseTube(ctx, cmd.Tube, cmd.Delay), c.w.Paused)
	default:
		return c.statsCommand(ctx, cmd)
	}
}

var peekState = map[string]string{"peek-ready": "ready", "peek-delayed": "delayed", "peek-buried": "buried"}

// okOr writes the success reply when err is nil and returns err otherwise.
func okOr(err error, reply func()) error {
	if err != nil {
		return err
	}
	reply()
	return nil
}

func (c *conn) replyJob(j proto.Job, err error, reply func(uint64, []byte)) error {
	if err != nil {
		return err
	}
	reply(j.ID, j.Body)
	return nil
}

func (c *conn) put(ctx context.Context, cmd proto.Put) error {
	if !c.producer {
		c.producer = true
		c.srv.conns.producers.Add(1)
	}
	if c.srv.draining.Load() {
		return proto.ErrDraining
	}
	ttr := max(cmd.TTR, minTTR)
	id, buried, err := c.srv.cfg.Backend.Put(ctx, c.used, cmd.Pri, cmd.Delay, ttr, cmd.Body)
	if err != nil {
		return err
	}
	if buried {
		c.w.BuriedID(id)
	} else {
		c.w.Inserted(id)
	}
	return nil
}

// reserve waits on every watched tube at once. While it waits, the connection is read in the
// background: a client that closes its sending side is answered TIMED_OUT at once, as
// beanstalkd does. A second before a job the connection holds would time out, the wait ends
// with DEADLINE_SOON; if that moment has come already, only a job ready now is taken.
func (c *conn) reserve(ctx context.Context, timeout time.Duration) error {
	if !c.worker {
		c.worker = true
		c.srv.conns.workers.Add(1)
	}
	c.srv.conns.waiting.Add(1)
	defer c.srv.conns.waiting.Add(-1)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if soon, ok := c.held.soon(time.Now()); ok {
		wait := time.Until(soon)
		if wait <= 0 {
			return c.reserveNow()
		}
		t := time.AfterFunc(wait, func() { cancel(proto.ErrDeadlineSoon) })
		defer t.Stop()
	}
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		c.watchHangup(cancel)
	}()
	c.srv.tubes.wait(c.watched, 1)
	j, err := c.srv.cfg.Backend.Reserve(ctx, c.session, c.watched, timeout)
	c.srv.tubes.wait(c.watched, -1)
	// Unblock the background read and wait for it, so that the reader is this goroutine's again.
	_ = c.nc.SetReadDeadline(time.Now())
	<-watched
	_ = c.nc.SetReadDeadline(time.Time{})
	if err != nil {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, errHangup):
			err = proto.ErrTimedOut
		case errors.Is(cause, proto.ErrDeadlineSoon):
			err = proto.ErrDeadlineSoon
		}
	}
	return c.replyReserved(j, err)
}

// reserveNow takes a job that is ready now, or answers DEADLINE_SOON.
func (c *conn) reserveNow() error {
	j, err := c.srv.cfg.Backend.Reserve(context.Background(), c.session, c.watched, 0)
	if errors.Is(err, proto.ErrTimedOut) {
		err = proto.ErrDeadlineSoon
	}
	return c.replyReserved(j, err)
}

// replyReserved answers a reserve and starts the job's TTR clock.
func (c *conn) replyReserved(j proto.Job, err error) error {
	if err != nil {
		return err
	}
	c.held.reserved(j.ID, j.TTR, time.Now())
	c.w.Reserved(j.ID, j.Body)
	return nil
}

// errHangup cancels a reserve whose client has closed its sending side or gone away.
var errHangup = errors.New("client hung up")

// watchHangup reads until the client hangs up (then it cancels with errHangup), the buffer is
// full, or the read deadline set when the reserve ends.
func (c *conn) watchHangup(cancel context.CancelCauseFunc) {
	for {
		err := c.r.Fill()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return
		case err != nil:
			cancel(errHangup)
			return
		case c.r.Full():
			return
		}
	}
}
