package delayq

import (
	"context"
	"errors"
	"time"

	"github.com/delayq/delayq/internal/ackq"
	"github.com/delayq/delayq/internal/store"
)

// requests returns the ack requests of acks, for a reserve call or a round trip of their own.
func requests(acks []ackq.Ack) []ackReq {
	out := make([]ackReq, len(acks))
	for i, a := range acks {
		out[i] = ackReq{part: a.Part, lease: a.Lease}
	}
	return out
}

// finish acks, nacks or snoozes a job after its handler returned err, trying again after
// passing failures until it goes through, the lease is lost, its deadline passes or the Worker
// stops waiting.
// ctx carries the delivery's span, under which a nack's or release's span is made; its
// cancellation is the Worker's ack queue's.
func (w *Worker) finish(ctx context.Context, f ackq.Ack, err error) {
	if err == nil {
		w.acks.Send([]ackq.Ack{f})
		return
	}
	l := Lease{Topic: f.Topic, ID: f.Lease.ID, Token: f.Lease.Token}
	op := "nack"
	settle := func(ctx context.Context) error {
		_, err := w.c.Nack(ctx, l, NackOptions{Error: err.Error()})
		return err
	}
	var he *handlerError
	if errors.As(err, &he) {
		o := NackOptions{Error: err.Error(), Delay: he.delay, Dead: he.dead}
		settle = func(ctx context.Context) error {
			_, err := w.c.Nack(ctx, l, o)
			return err
		}
		if he.snooze {
			// A snooze is a release with a delay: the attempt does not count.
			op = "snooze"
			settle = func(ctx context.Context) error {
				_, err := w.c.Release(ctx, l, ReleaseOptions{Delay: he.delay})
				return err
			}
		}
	}
	for failures := 0; ; failures++ {
		nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		nerr := settle(nctx)
		cancel()
		switch {
		case nerr == nil:
			return
		case errors.Is(nerr, ErrLeaseLost):
			// A nack or release of the same lease that went through answers as it did (its
			// record), so lost means lost.
			w.log.Info("delayq: "+op+" refused: the job was cancelled or its lease expired before the handler finished", "topic", f.Topic, "id", f.Lease.ID)
			return
		case !store.OutcomeUnknown(nerr), !time.Now().Before(f.Deadline), w.acks.Context().Err() != nil:
			w.log.Warn("delayq: "+op+" failed; the job will be delivered again after its TTR", "topic", f.Topic, "id", f.Lease.ID, "err", nerr)
			return
		}
		sleep(w.acks.Context(), ackq.Delay(failures+1))
	}
}
