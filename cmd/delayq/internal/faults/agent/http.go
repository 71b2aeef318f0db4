package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/apiclient"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
	"github.com/delayq/delayq/cmd/delayq/internal/faults"
)

func newAPIClient(o *options) (*apiclient.Client, error) {
	return apiclient.New(apiclient.Config{
		BaseURL:    o.server,
		HTTPClient: &http.Client{Timeout: 10 * time.Second},
	})
}

// httpProduce enqueues jobs through a delayq server's batch endpoint, like produce.
func httpProduce(ctx context.Context, o *options, log *faults.Log) error {
	api, err := newAPIClient(o)
	if err != nil {
		return err
	}
	backoff, err := o.backoffSteps()
	if err != nil {
		return err
	}
	if o.resend {
		inBatches(ctx, o, func(from, k int) {
			for i := range k {
				id := faults.JobID(o.prefix, o.first+from+i)
				enqueueUntilAnswered(ctx, api, o.topic, apiclient.JobRequest{
					ID: id, Body: faults.Body(id, o.pad), Delay: o.delay + spreadOf(id, o.spread),
					TTR: o.ttr, Backoff: backoff, CallbackURL: o.callback,
				}, log)
			}
		})
		return nil
	}
	inBatches(ctx, o, func(from, k int) {
		reqs := make([]apiclient.JobRequest, k)
		ids := make([]string, k)
		for i := range reqs {
			id := faults.JobID(o.prefix, o.first+from+i)
			ids[i] = id
			reqs[i] = apiclient.JobRequest{
				ID: id, Body: faults.Body(id, o.pad), Delay: o.delay + spreadOf(id, o.spread),
				TTR: o.ttr, Backoff: backoff, CallbackURL: o.callback,
			}
		}
		log.Write(faults.Event{Kind: faults.Send, IDs: ids})
		res, err := api.EnqueueBatch(ctx, o.topic, reqs)
		if err != nil {
			log.Write(faults.Event{Kind: faults.EnqueueErr, IDs: ids, Err: err.Error()})
			pause(ctx, 20*time.Millisecond)
			return
		}
		for i, r := range res {
			if r.Error != nil || r.Job == nil {
				log.Write(faults.Event{Kind: faults.EnqueueErr, ID: ids[i], Err: fmt.Sprint(r.Error)})
				continue
			}
			log.Write(faults.Event{Kind: faults.Enqueued, ID: ids[i], RunAt: r.Job.RunAt.UnixMilli()})
		}
	})
	return nil
}

// enqueueUntilAnswered enqueues one job as a producer that must not lose it does: while an
// answer leaves the outcome unknown (a 5xx, a broken connection, a timeout) it logs the error
// and sends the identical request again, until a definite answer comes or ctx ends. A 201 is
// logged Enqueued with the answer's run_at and created_at and the number of sends; a repeat
// that meets already_exists is logged ResendRefused, since within the replay window it should
// have answered the first call's job; any other 4xx is logged EnqueueErr and ends the job.
func enqueueUntilAnswered(ctx context.Context, api *apiclient.Client, topic string, req apiclient.JobRequest, log *faults.Log) {
	log.Write(faults.Event{Kind: faults.Send, IDs: []string{req.ID}})
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			log.Write(faults.Event{Kind: faults.Resend, ID: req.ID, Attempt: attempt})
		}
		j, err := api.Enqueue(ctx, topic, req)
		var apiErr *apiclient.Error
		switch {
		case err == nil:
			log.Write(faults.Event{
				Kind: faults.Enqueued, ID: req.ID, Attempt: attempt,
				RunAt: j.RunAt.UnixMilli(), Created: j.CreatedAt.UnixMilli(),
			})
			return
		case attempt > 1 && errors.As(err, &apiErr) && apiErr.Code == "already_exists":
			log.Write(faults.Event{Kind: faults.ResendRefused, ID: req.ID, Attempt: attempt, Err: err.Error()})
			return
		case errors.As(err, &apiErr) && apiErr.Status < 500, ctx.Err() != nil:
			log.Write(faults.Event{Kind: faults.EnqueueErr, ID: req.ID, Attempt: attempt, Err: err.Error()})
			return
		}
		log.Write(faults.Event{Kind: faults.EnqueueErr, ID: req.ID, Attempt: attempt, Err: err.Error()})
		pause(ctx, 50*time.Millisecond)
	}
}

// httpWork consumes through a delayq server's reserve and ack endpoints: -concurrency loops,
// each reserving one job at a time with a long poll, until ctx ends.
func httpWork(ctx context.Context, o *options, log *faults.Log) error {
	api, err := newAPIClient(o)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	var calls atomic.Int64
	for range max(o.conc, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				rctx, cancel := ctx, context.CancelFunc(func() {})
				hangup := o.hangup > 0 && calls.Add(1)%int64(o.hangup) == 0
				if hangup {
					// The client gives up on this reserve at about the moment the server
					// answers it: whatever the server leased for it must come back.
					rctx, cancel = context.WithTimeout(ctx, time.Duration(rand.Int64N(3000))*time.Microsecond)
				}
				jobs, err := api.Reserve(rctx, o.topic, apiclient.ReserveRequest{Max: 1, Wait: time.Second})
				cancel()
				if err != nil {
					if hangup && ctx.Err() == nil {
						log.Write(faults.Event{Kind: faults.HungUp})
						continue
					}
					if ctx.Err() == nil {
						log.Write(faults.Event{Kind: faults.Warn, Err: "reserve: " + err.Error()})
					}
					pause(ctx, 50*time.Millisecond)
					continue
				}
				for _, j := range jobs {
					httpHandle(o, api, j, log)
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

func httpHandle(o *options, api *apiclient.Client, j *apiv1.Job, log *faults.Log) {
	e := faults.Event{Kind: faults.Delivered, ID: j.ID, Attempt: j.Attempts, Lease: j.Lease, RunAt: j.RunAt.UnixMilli()}
	if j.LeaseDeadline != nil {
		e.Reserved = j.LeaseDeadline.Add(-time.Duration(j.TTRMs) * time.Millisecond).UnixMilli()
	}
	if err := faults.CheckBody(j.ID, j.Body); err != nil {
		e.Bad = err.Error()
	}
	log.Write(e)
	pause(context.Background(), o.sleep)
	a := faults.Event{Kind: faults.AckSent, ID: j.ID, Lease: j.Lease}
	log.Write(a)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := api.Ack(ctx, o.topic, j.ID, j.Lease)
	var apiErr *apiclient.Error
	switch {
	case err == nil:
		a.Kind = faults.Acked
	case errors.As(err, &apiErr) && apiErr.Code == "lease_lost":
		a.Kind = faults.AckRefused
	default:
		a.Kind, a.Err = faults.AckErr, err.Error()
	}
	log.Write(a)
}

// webhook receives a delayq server's push deliveries on -listen until ctx ends, logs each and
// answers 204, which acks it. It logs a delivery's receipt time as its lease time, which is no
// earlier than the lease itself.
func webhook(ctx context.Context, o *options, log *faults.Log) error {
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	srv := &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got := time.Now().UnixMilli()
			var p apiv1.WebhookPayload
			data, err := io.ReadAll(r.Body)
			if err == nil {
				err = json.Unmarshal(data, &p)
			}
			if err != nil || r.Header.Get("webhook-id") == "" {
				log.Write(faults.Event{Kind: faults.Warn, Err: fmt.Sprintf("webhook: malformed delivery %q: %v", data, err)})
				http.Error(w, "malformed", http.StatusBadRequest)
				return
			}
			e := faults.Event{
				Kind: faults.Delivered, ID: p.ID, Attempt: p.Attempt, Lease: "attempt-" + strconv.Itoa(p.Attempt),
				RunAt: p.RunAt.UnixMilli(), Reserved: got, Implicit: true,
			}
			if err := faults.CheckBody(p.ID, p.Body); err != nil {
				e.Bad = err.Error()
			}
			log.Write(e)
			w.WriteHeader(http.StatusNoContent)
		}),
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
