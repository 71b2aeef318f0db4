package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// reserve is POST /v1/topics/{topic}/reserve. An empty body takes every default. The wait
// ends early when the client goes away, and jobs leased for a client that went away before
// its answer was written are put back at once, their attempt not counted. The extension
// max_bytes (default 16 MiB) bounds the jobs' total size; at least one job is returned.
func (a *api) reserve(w http.ResponseWriter, r *http.Request) error {
	topic, err := topicParam(r)
	if err != nil {
		return err
	}
	var q apiv1.ReserveRequest
	if err := readJSON(w, r, smallBytes, &q, true); err != nil {
		return err
	}
	o, err := reserveOptions(&q)
	if err != nil {
		return err
	}
	if err := o.Validate(a.lim); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), o.Wait+a.timeout)
	defer cancel()
	// Reserve puts back what it leased when ctx ends first; jobs it returns after the answer
	// was given up on are put back here. It runs on a goroutine of its own whatever the client:
	// undoing a reserve whose answer was lost goes on for up to two seconds after ctx ends.
	jobs, err := boundedOrUndo(ctx, func(ctx context.Context) ([]*delayq.Job, error) { return a.c.Reserve(ctx, topic, o) },
		func(jobs []*delayq.Job) { a.putBack(r, jobs) })
	if err != nil && r.Context().Err() != nil && errors.Is(err, context.Canceled) {
		// The wait was ended by the server shutting down (or the client leaving): nothing was
		// leased, and an empty answer tells a consumer to come back.
		jobs, err = nil, nil
	}
	if err != nil {
		return err
	}
	if a.m != nil && len(jobs) > 0 {
		a.m.Delivered.WithLabelValues(topic, "pull").Add(float64(len(jobs)))
		for _, j := range jobs {
			a.m.ObserveLateness(topic, "pull", j.Lateness())
		}
	}
	if r.Context().Err() != nil {
		// The client left (or the server is shutting down): the jobs go back, and an empty
		// answer tells a consumer still listening to come back.
		a.putBack(r, jobs)
		jobs = nil
	}
	answer := apiv1.ReserveResponse{Jobs: apiv1.NewJobs(jobs, true)}
	a.tellTopicExists(w, r, topic, &answer)
	// Once the answer is written and flushed, a hang-up says nothing: one-shot clients (curl,
	// Python's urllib) close the connection as soon as they have read it. Their jobs keep their
	// leases; a client that really left before reading lets them expire after their TTR.
	if err := a.writeJSONTo(w, http.StatusOK, answer); len(jobs) > 0 && (err != nil || http.NewResponseController(w).Flush() != nil) {
		a.putBack(r, jobs)
	}
	return nil
}

// tellTopicExists says in the reserve answer's header whether topic exists, and in its body
// when it does not: a reserve on a misspelt topic would otherwise long-poll in silence. Only
// an empty answer asks Redis (the topic's registry entry, one HGET), and the topic is never
// created; when Redis does not answer, the header is left out.
func (a *api) tellTopicExists(w http.ResponseWriter, r *http.Request, topic string, answer *apiv1.ReserveResponse) {
	exists := len(answer.Jobs) > 0
	if !exists {
		if r.Context().Err() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), a.timeout)
		defer cancel()
		var err error
		if exists, err = a.c.TopicExists(ctx, topic); err != nil {
			return
		}
	}
	w.Header().Set(apiv1.TopicExistsHeader, strconv.FormatBool(exists))
	if !exists {
		answer.TopicExists = &exists
	}
}

// reserveOptions reads q; the library checks the ranges. A count given as 0, which the library
// reads as "the default", is refused.
func reserveOptions(q *apiv1.ReserveRequest) (delayq.ReserveOptions, error) {
	o := delayq.ReserveOptions{Max: 1}
	var err error
	if q.Max != nil {
		if *q.Max == 0 {
			return o, invalidf("max", "0 jobs: leave the field out for one")
		}
		o.Max = int(*q.Max)
	}
	if q.MaxBytes != nil {
		if *q.MaxBytes == 0 {
			return o, invalidf("max_bytes", "0 bytes: leave the field out for the default")
		}
		o.MaxBytes = *q.MaxBytes
	}
	if q.WaitMs != nil {
		if o.Wait, err = duration("wait_ms", *q.WaitMs); err != nil {
			return o, err
		}
	}
	if q.TTRMs != nil {
		if o.TTR, err = leaseLength("ttr_ms", *q.TTRMs); err != nil {
			return o, err
		}
	}
	return o, nil
}

// putBack releases the leases of jobs whose answer never reached the client, so that they are
// due again at once and the attempt does not count.
func (a *api) putBack(r *http.Request, jobs []*delayq.Job) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), a.timeout)
	defer cancel()
	for _, j := range jobs {
		if _, err := a.c.Release(ctx, j.Lease(), delayq.ReleaseOptions{}); err != nil && !errors.Is(err, delayq.ErrLeaseLost) {
			a.log.Warn("httpapi: putting back a job whose reserve answer was not delivered", "topic", j.Topic, "id", j.ID, "err", err)
		}
	}
}

// readLease reads the body of a request about the job in r's path into q, whose lease token
// field is token, and returns the lease it names.
func readLease(w http.ResponseWriter, r *http.Request, q any, token **string) (delayq.Lease, error) {
	topic, id, err := jobParams(r)
	if err != nil {
		return delayq.Lease{}, err
	}
	if err := readJSON(w, r, smallBytes, q, false); err != nil {
		return delayq.Lease{}, err
	}
	if *token == nil || **token == "" {
		return delayq.Lease{}, invalidf("lease", "is required: the token that reserve returned")
	}
	return delayq.Lease{Topic: topic, ID: id, Token: **token}, nil
}

// withLease reads the {"lease": ...} body of a request about the job in r's path and runs op
// on that lease. It returns the topic.
func (a *api) withLease(w http.ResponseWriter, r *http.Request, op func(ctx context.Context, l delayq.Lease) error) (string, error) {
	var q apiv1.LeaseRequest
	l, err := readLease(w, r, &q, &q.Lease)
	if err != nil {
		return "", err
	}
	ctx, cancel := a.storeContext(r)
	defer cancel()
	return l.Topic, boundedErr(ctx, a.inline, func(ctx context.Context) error { return op(ctx, l) })
}

// ack is POST /v1/topics/{topic}/jobs/{id}/ack.
func (a *api) ack(w http.ResponseWriter, r *http.Request) error {
	topic, err := a.withLease(w, r, a.c.Ack)
	if err != nil {
		return err
	}
	if a.m != nil {
		a.m.Acked.WithLabelValues(topic).Inc()
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// release is POST /v1/topics/{topic}/jobs/{id}/release: the lease is given back unfinished
// and the attempt does not count. The job is due again at once, or, with delay_ms or run_at,
// then: a snooze, which the job counts and which past its max_snoozes makes it dead.
func (a *api) release(w http.ResponseWriter, r *http.Request) error {
	var q apiv1.ReleaseRequest
	l, err := readLease(w, r, &q, &q.Lease)
	if err != nil {
		return err
	}
	var o delayq.ReleaseOptions
	switch {
	case q.DelayMs != nil && q.RunAt != nil:
		return invalidf("run_at", "give delay_ms or run_at, not both")
	case q.DelayMs != nil:
		d, err := duration("delay_ms", *q.DelayMs)
		if err != nil {
			return err
		}
		o.Delay = &d
	case q.RunAt != nil:
		if o.RunAt, err = parseRunAt(*q.RunAt); err != nil {
			return err
		}
	}
	ctx, cancel := a.storeContext(r)
	defer cancel()
	dead, err := bounded(ctx, a.inline, func(ctx context.Context) (bool, error) {
		return a.c.Release(ctx, l, o)
	})
	if err != nil {
		return err
	}
	if dead && a.m != nil {
		a.m.Dead.WithLabelValues(l.Topic).Inc()
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// nack is POST /v1/topics/{topic}/jobs/{id}/nack.
func (a *api) nack(w http.ResponseWriter, r *http.Request) error {
	var q apiv1.NackRequest
	l, err := readLease(w, r, &q, &q.Lease)
	if err != nil {
		return err
	}
	var o delayq.NackOptions
	if q.DelayMs != nil {
		d, err := duration("delay_ms", *q.DelayMs)
		if err != nil {
			return err
		}
		o.Delay = &d
	}
	if q.Error != nil {
		o.Error = *q.Error // the library cuts it to what a job keeps
	}
	o.Dead = q.Dead != nil && *q.Dead
	ctx, cancel := a.storeContext(r)
	defer cancel()
	dead, err := bounded(ctx, a.inline, func(ctx context.Context) (bool, error) {
		return a.c.Nack(ctx, l, o)
	})
	if err != nil {
		return err
	}
	if a.m != nil {
		a.m.Nacked.WithLabelValues(l.Topic).Inc()
		if dead {
			a.m.Dead.WithLabelValues(l.Topic).Inc()
		} else {
			a.m.Retried.WithLabelValues(l.Topic).Inc()
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// touch is POST /v1/topics/{topic}/jobs/{id}/touch.
func (a *api) touch(w http.ResponseWriter, r *http.Request) error {
	var q apiv1.TouchRequest
	l, err := readLease(w, r, &q, &q.Lease)
	if err != nil {
		return err
	}
	var ttr time.Duration
	if q.TTRMs != nil {
		if ttr, err = leaseLength("ttr_ms", *q.TTRMs); err != nil {
			return err
		}
	}
	ctx, cancel := a.storeContext(r)
	defer cancel()
	deadline, err := bounded(ctx, a.inline, func(ctx context.Context) (time.Time, error) {
		return a.c.Touch(ctx, l, ttr)
	})
	if err != nil {
		return err
	}
	a.writeJSON(w, http.StatusOK, apiv1.TouchResponse{LeaseDeadline: apiv1.Time{Time: deadline}})
	return nil
}
