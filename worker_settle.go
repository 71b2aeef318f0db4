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

// finish acks or nacks a job after its handler returned err, trying again after passing
// failures until it goes through, the lease is lost, its deadline passes or the Worker stops
// waiting.
// ctx carries the delivery's span, under which a nack's span is made; its cancellation is
// the Worker's ack queue's.
func (w *Worker) finish(ctx context.Context, f ackq.Ack, err error) {
	if err == nil {
		w.acks.Send([]ackq.Ack{f})
		return
	}
	o := NackOptions{Error: err.Error()}
	var he *handlerError
	if errors.As(err, &he) {
		o.Delay, o.Dead = he.delay, he.dead
	}
	for failures := 0; ; failures++ {
		nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, nerr := w.c.Nack(nctx, Lease{Topic: f.Topic, ID: f.Lease.ID, Token: f.Lease.Token}, o)
		cancel()
		switch {
		case nerr == nil:
			return
		case errors.Is(nerr, ErrLeaseLost):
			// A nack of the same lease that went through answers as it did (its record), so
			// lost means lost.
			w.log.Info("delayq: nack refused: the job was cancelled or its lease expired before the handler finished", "topic", f.Topic, "id", f.Lease.ID)
			return
		case !store.OutcomeUnknown(nerr), !time.Now().Before(f.Deadline), w.acks.Context().Err() != nil:
			w.log.Warn("delayq: nack failed; the job will be delivered again after its TTR", "topic", f.Topic, "id", f.Lease.ID, "err", nerr)
			return
		}
		sleep(w.acks.Context(), ackq.Delay(failures+1))
	}
}
