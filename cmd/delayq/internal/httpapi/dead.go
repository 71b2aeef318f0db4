package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// defaultDeadPage is the page size of a dead-letter listing without limit.
const defaultDeadPage = 100

// listDead is GET /v1/topics/{topic}/dead?limit=&cursor=.
func (a *api) listDead(w http.ResponseWriter, r *http.Request) error {
	topic, err := topicParam(r)
	if err != nil {
		return err
	}
	query := r.URL.Query()
	limit := defaultDeadPage
	if query.Has("limit") {
		n, err := strconv.ParseInt(query.Get("limit"), 10, 64)
		if err != nil {
			return invalidf("limit", "%q is not an integer", query.Get("limit"))
		}
		limit = int(n) // the library checks the range
	}
	ctx, cancel := a.storeContext(r)
	defer cancel()
	type page struct {
		jobs []*delayq.Job
		next string
	}
	p, err := bounded(ctx, a.inline, func(ctx context.Context) (page, error) {
		jobs, next, err := a.c.DeadJobs(ctx, topic, limit, query.Get("cursor"))
		return page{jobs, next}, err
	})
	if err != nil {
		return err
	}
	jobs, next := p.jobs, p.next
	a.writeJSON(w, http.StatusOK, apiv1.DeadPage{Jobs: apiv1.NewJobs(jobs, false), NextCursor: next})
	return nil
}

// deadSelectionBytes bounds a dead-letter selection: MaxBatch ids of 256 bytes, each written
// with JSON escapes at worst.
func (a *api) deadSelectionBytes() int64 {
	return int64(a.lim.MaxBatch)*(256*6+4) + 4096
}

// readDeadSelection reads and checks a selection; all reports {"all": true}.
func (a *api) readDeadSelection(w http.ResponseWriter, r *http.Request) (ids []string, all bool, err error) {
	var q apiv1.DeadSelection
	if err := readJSON(w, r, a.deadSelectionBytes(), &q, false); err != nil {
		return nil, false, err
	}
	switch {
	case q.IDs != nil && q.All != nil:
		return nil, false, invalidf("all", "give ids or all, not both")
	case q.All != nil:
		if !*q.All {
			return nil, false, invalidf("all", "must be true to select every dead job; give ids to select some")
		}
		return nil, true, nil
	case q.IDs != nil:
		if len(q.IDs) == 0 || len(q.IDs) > a.lim.MaxBatch {
			return nil, false, invalidf("ids", "give 1 to %d ids, got %d", a.lim.MaxBatch, len(q.IDs))
		}
		for i, id := range q.IDs {
			if err := delayq.ValidateID(id); err != nil {
				return nil, false, invalidf(fmt.Sprintf("ids[%d]", i), "%s", reason(err))
			}
		}
		return q.IDs, false, nil
	}
	return nil, false, invalidf("ids", "give ids or all")
}

// reason is the reason of a validation error, or its text.
func reason(err error) string {
	if inv, ok := err.(*delayq.InvalidError); ok {
		return inv.Reason
	}
	return err.Error()
}

// deadOp runs one of the library's dead-letter operations on ids, or on all, and answers
// with answer(n), n being how many jobs it affected.
func (a *api) deadOp(w http.ResponseWriter, r *http.Request, answer func(n int) any,
	some func(ctx context.Context, topic string, ids []string) (int, error),
	every func(ctx context.Context, topic string) (int, error)) error {
	topic, err := topicParam(r)
	if err != nil {
		return err
	}
	ids, all, err := a.readDeadSelection(w, r)
	if err != nil {
		return err
	}
	ctx, cancel := a.storeContext(r)
	defer cancel()
	n, err := bounded(ctx, a.inline, func(ctx context.Context) (int, error) {
		if all {
			return every(ctx, topic)
		}
		return some(ctx, topic, ids)
	})
	if err != nil {
		return err
	}
	a.writeJSON(w, http.StatusOK, answer(n))
	return nil
}

// requeueDead is POST /v1/topics/{topic}/dead/requeue.
func (a *api) requeueDead(w http.ResponseWriter, r *http.Request) error {
	return a.deadOp(w, r, func(n int) any { return apiv1.RequeueResponse{Requeued: n} }, a.c.RequeueDead, a.c.RequeueAllDead)
}

// deleteDead is DELETE /v1/topics/{topic}/dead.
func (a *api) deleteDead(w http.ResponseWriter, r *http.Request) error {
	return a.deadOp(w, r, func(n int) any { return apiv1.DeleteResponse{Deleted: n} }, a.c.DeleteDead, a.c.DeleteAllDead)
}
