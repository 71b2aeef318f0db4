package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/delayq/delayq/internal/apiclient"
	"github.com/delayq/delayq/internal/httpapi"
)

const (
	httpBatch     = 1000
	httpReserve   = 100
	httpProducers = 4
	httpConsumers = 16
)

func runHTTP(ctx context.Context, env *Env, c Contestant) Result {
	var r Result
	names := []string{"enqueue (batch 1000)", "reserve 100 + ack", "overall",
		"enqueue 1 job, 1 connection", "enqueue 1 job, 64 connections", "enqueue 1 job, 64 connections, p99",
		"enqueue 1 job, 64 connections, p99 at half rate"}
	q, err := env.open(ctx, c, "http")
	if err != nil {
		return fail(r, "%v", err)
	}
	defer closeQueue(ctx, q)
	dc := Client(q)
	if dc == nil {
		for _, m := range names[:5] {
			r.na(m, "jobs/s", Higher, "delayq's HTTP API only")
		}
		r.na(names[5], "ms", Lower, "delayq's HTTP API only")
		r.na(names[6], "ms", Lower, "delayq's HTTP API only")
		return r
	}
	base := env.HTTP
	topic := fmt.Sprintf("bench-http-%d", env.seq.Add(1))
	if base == "" {
		h, err := httpapi.New(httpapi.Config{Client: dc, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return fail(r, "%v", err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fail(r, "listening: %v", err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		base = "http://" + ln.Addr().String()
		r.note("an in-process server on %s, on the benchmark's Redis", base)
	} else {
		r.note("the server at %s", base)
	}
	api, err := apiclient.New(apiclient.Config{
		BaseURL:    base,
		HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
	})
	if err != nil {
		return fail(r, "%v", err)
	}
	n := env.sizes().http
	r.note("%d jobs with %d-byte JSON string bodies, due now; %d producers send batches of %d; %d consumers each reserve up to %d and ack them one request at a time", n, BodySize+2, httpProducers, httpBatch, httpConsumers, httpReserve)

	p, err := produce(ctx, Plan{N: n, Producers: httpProducers, Batch: httpBatch}, httpBatch, func(ctx context.Context, from, to int) error {
		jobs := make([]json.RawMessage, 0, to-from)
		for i := from; i < to; i++ {
			jobs = append(jobs, json.RawMessage(`{"body":"`+string(Body(i))+`"}`))
		}
		res, err := api.EnqueueBatchRaw(ctx, topic, jobs)
		if err != nil {
			return err
		}
		for _, br := range res {
			if br.Error != nil {
				return br.Error
			}
		}
		return nil
	})
	if err != nil {
		return fail(r, "enqueue: %v", err)
	}
	enqueue := p.End.Sub(p.Start)
	r.add(names[0], rate(n, enqueue), "jobs/s", Higher)

	actx, cancel := context.WithTimeout(ctx, env.awaitTimeout())
	defer cancel()
	start := time.Now()
	if err := drainHTTP(actx, api, topic, n); err != nil {
		return fail(r, "consume: %v", err)
	}
	consume := time.Since(start)
	r.add(names[1], rate(n, consume), "jobs/s", Higher)
	r.add(names[2], rate(n, enqueue+consume), "jobs/s", Higher)

	// One job per request, over keep-alive connections: one caller, then 64 at once.
	single := max(n/10, 100)
	took, _, err := enqueueSingles(ctx, api, topic, single, 1, 0)
	if err != nil {
		return fail(r, "enqueue one job per request: %v", err)
	}
	r.add(names[3], rate(single, took), "jobs/s", Higher)
	took, latencies, err := enqueueSingles(ctx, api, topic, single, 64, 0)
	if err != nil {
		return fail(r, "enqueue one job per request: %v", err)
	}
	full := rate(single, took)
	r.add(names[4], full, "jobs/s", Higher)
	r.add(names[5], ms(summarize(latencies, 0).P99), "ms", Lower)
	// Half the rate just measured, paced: latency counts from when each request was due to be
	// sent, so a stall delays the requests behind it too.
	_, latencies, err = enqueueSingles(ctx, api, topic, single, 64, time.Duration(float64(time.Second)/(full/2)))
	if err != nil {
		return fail(r, "enqueue one job per request at half rate: %v", err)
	}
	r.add(names[6], ms(summarize(latencies, 0).P99), "ms", Lower)
	r.note("then %d jobs one per request, from 1 caller, from 64 callers as fast as they go (p99 of request latency at that load), and from 64 callers paced at half that rate", single)
	return r
}

// enqueueSingles enqueues n jobs one per request from conns callers at once, request i sent no
// earlier than start + i×every (as soon as a caller is free when every is 0), and returns how
// long it took and each request's latency from when it was due to be sent.
func enqueueSingles(ctx context.Context, api *apiclient.Client, topic string, n, conns int, every time.Duration) (time.Duration, []time.Duration, error) {
	var next atomic.Int64
	var mu sync.Mutex
	latencies := make([]time.Duration, 0, n)
	errs := make([]error, conns)
	var wg sync.WaitGroup
	start := time.Now()
	for k := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				sent := time.Now()
				if every > 0 {
					sent = start.Add(time.Duration(i) * every)
					time.Sleep(time.Until(sent))
				}
				if _, err := api.Enqueue(ctx, topic, apiclient.JobRequest{Body: json.RawMessage(`"` + string(Body(i)) + `"`), Delay: time.Hour}); err != nil {
					errs[k] = err
					return
				}
				d := time.Since(sent)
				mu.Lock()
				latencies = append(latencies, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return time.Since(start), latencies, errors.Join(errs...)
}

// drainHTTP reserves and acks n jobs of topic through the API with httpConsumers callers.
func drainHTTP(ctx context.Context, api *apiclient.Client, topic string, n int) error {
	var acked atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, httpConsumers)
	for k := range httpConsumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for acked.Load() < int64(n) && ctx.Err() == nil {
				jobs, err := api.Reserve(ctx, topic, apiclient.ReserveRequest{Max: httpReserve, Wait: 100 * time.Millisecond})
				if err != nil {
					errs[k] = err
					return
				}
				for _, j := range jobs {
					if err := api.Ack(ctx, topic, j.ID, j.Lease); err != nil {
						errs[k] = err
						return
					}
					acked.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if got := acked.Load(); got < int64(n) {
		return fmt.Errorf("acked %d of %d jobs: %w", got, n, ctx.Err())
	}
	return nil
}
