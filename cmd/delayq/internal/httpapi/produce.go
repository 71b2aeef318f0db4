package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// topicParam returns the {topic} path value, validated.
func topicParam(r *http.Request) (string, error) {
	topic := r.PathValue("topic")
	return topic, delayq.ValidateTopic(topic)
}

// jobParams returns the {topic} and {id} path values, validated. The router unescapes them,
// so ids may hold any character that is escaped in the URL.
func jobParams(r *http.Request) (topic, id string, err error) {
	if topic, err = topicParam(r); err != nil {
		return "", "", err
	}
	id = r.PathValue("id")
	return topic, id, delayq.ValidateID(id)
}

// enqueue is POST /v1/topics/{topic}/jobs.
func (a *api) enqueue(w http.ResponseWriter, r *http.Request) error {
	topic, err := topicParam(r)
	if err != nil {
		return err
	}
	var q apiv1.EnqueueRequest
	if err := readJSON(w, r, a.jobBytes, &q, false); err != nil {
		return err
	}
	ctx, cancel := a.storeContext(r)
	defer cancel()
	s, err := a.spec(ctx, &q, a.newCallbackChecker())
	if err != nil {
		return err
	}
	job, err := bounded(ctx, a.inline, func(ctx context.Context) (*delayq.Job, error) { return a.c.Enqueue(ctx, topic, s) })
	if err != nil {
		return err
	}
	if a.m != nil && !job.Existed { // a kept or replaced job was enqueued before
		a.m.Enqueued.WithLabelValues(topic).Inc()
	}
	if job.CallbackURL != "" && a.pushed != nil {
		a.pushed(topic)
	}
	status := http.StatusCreated
	if job.Existed {
		status = http.StatusOK // kept or replaced (on_conflict)
	}
	a.writeJSON(w, status, apiv1.NewJob(job))
	return nil
}

// enqueueBatch is POST /v1/topics/{topic}/jobs/batch. Items are decoded one by one, so that a
// bad item fails alone.
func (a *api) enqueueBatch(w http.ResponseWriter, r *http.Request) error {
	topic, err := topicParam(r)
	if err != nil {
		return err
	}
	var q apiv1.BatchRequest
	if err := readJSON(w, r, a.batchBytes, &q, false); err != nil {
		return err
	}
	if len(q.Jobs) == 0 || len(q.Jobs) > a.lim.MaxBatch {
		return invalidf("jobs", "a batch holds 1 to %d jobs, got %d", a.lim.MaxBatch, len(q.Jobs))
	}
	ctx, cancel := a.storeContext(r)
	defer cancel()
	results := make([]apiv1.BatchResult, len(q.Jobs))
	var specs []delayq.Spec
	var origin []int
	cb := a.newCallbackChecker()
	for i, raw := range q.Jobs {
		var item apiv1.EnqueueRequest
		err := decodeStrict(raw, &item)
		var s delayq.Spec
		if err == nil {
			s, err = a.spec(ctx, &item, cb)
		}
		if err != nil {
			results[i].Error = a.itemError(r, err)
			continue
		}
		specs = append(specs, s)
		origin = append(origin, i)
	}
	if len(specs) > 0 {
		res, err := bounded(ctx, a.inline, func(ctx context.Context) ([]delayq.BatchResult, error) {
			return a.c.EnqueueBatch(ctx, topic, specs)
		})
		if err != nil {
			return err
		}
		added, pushed := 0, false
		for k, br := range res {
			i := origin[k]
			if br.Err != nil {
				results[i].Error = a.itemError(r, br.Err)
				continue
			}
			results[i].Job = apiv1.NewJob(br.Job)
			if !br.Job.Existed {
				added++
			}
			pushed = pushed || br.Job.CallbackURL != ""
		}
		if pushed && a.pushed != nil {
			a.pushed(topic)
		}
		if a.m != nil && added > 0 {
			a.m.Enqueued.WithLabelValues(topic).Add(float64(added))
		}
	}
	a.writeJSON(w, http.StatusOK, apiv1.BatchResponse{Results: results})
	return nil
}

// getJob is GET /v1/topics/{topic}/jobs/{id}.
func (a *api) getJob(w http.ResponseWriter, r *http.Request) error {
	topic, id, err := jobParams(r)
	if err != nil {
		return err
	}
	ctx, cancel := a.storeContext(r)
	defer cancel()
	job, err := bounded(ctx, a.inline, func(ctx context.Context) (*delayq.Job, error) { return a.c.Get(ctx, topic, id) })
	var done *delayq.DoneError
	if errors.As(err, &done) {
		// The id is kept by a job that ended within its unique_for: not a 404, which a
		// producer would read as "gone, make it again".
		a.writeJSON(w, http.StatusOK, apiv1.NewEndedJob(done))
		return nil
	}
	if err != nil {
		return err
	}
	a.writeJSON(w, http.StatusOK, apiv1.NewJob(job))
	return nil
}

// cancelJob is DELETE /v1/topics/{topic}/jobs/{id}.
func (a *api) cancelJob(w http.ResponseWriter, r *http.Request) error {
	topic, id, err := jobParams(r)
	if err != nil {
		return err
	}
	ctx, cancel := a.storeContext(r)
	defer cancel()
	if err := boundedErr(ctx, a.inline, func(ctx context.Context) error { return a.c.Cancel(ctx, topic, id) }); err != nil {
		return err
	}
	if a.m != nil {
		a.m.Cancelled.WithLabelValues(topic).Inc()
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// reschedule is PATCH /v1/topics/{topic}/jobs/{id}.
func (a *api) reschedule(w http.ResponseWriter, r *http.Request) error {
	topic, id, err := jobParams(r)
	if err != nil {
		return err
	}
	var q apiv1.RescheduleRequest
	if err := readJSON(w, r, smallBytes, &q, false); err != nil {
		return err
	}
	var delay time.Duration
	var at time.Time
	switch {
	case q.DelayMs != nil && q.RunAt != nil:
		return invalidf("run_at", "give delay_ms or run_at, not both")
	case q.DelayMs != nil:
		if delay, err = duration("delay_ms", *q.DelayMs); err != nil {
			return err
		}
	case q.RunAt != nil:
		if at, err = parseRunAt(*q.RunAt); err != nil {
			return err
		}
	default:
		return invalidf("delay_ms", "give delay_ms or run_at")
	}
	ctx, cancel := a.storeContext(r)
	defer cancel()
	job, err := bounded(ctx, a.inline, func(ctx context.Context) (*delayq.Job, error) {
		if q.DelayMs != nil {
			return a.c.Reschedule(ctx, topic, id, delay)
		}
		return a.c.RescheduleAt(ctx, topic, id, at)
	})
	if err != nil {
		return err
	}
	a.writeJSON(w, http.StatusOK, apiv1.NewJob(job))
	return nil
}
