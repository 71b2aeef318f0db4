package httpapi

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/access"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// scheduleParam returns the {name} path value, validated.
func scheduleParam(r *http.Request) (string, error) {
	name := r.PathValue("name")
	return name, delayq.ValidateScheduleName(name)
}

// putSchedule is PUT /v1/schedules/{name}: 201 when it creates the schedule, 200 when it
// replaces one.
func (a *api) putSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := scheduleParam(r)
	if err != nil {
		return err
	}
	var q apiv1.ScheduleRequest
	if err := readJSON(w, r, a.jobBytes, &q, false); err != nil {
		return err
	}
	ctx, cancel := a.storeContext(r)
	defer cancel()
	s, err := a.scheduleSpec(ctx, &q)
	if err != nil {
		return err
	}
	// A token bound to some topics puts schedules into them only, and replaces none of
	// another topic.
	if err := access.PrincipalOf(r.Context()).Allowed(access.Operate, s.Topic); err != nil {
		return permissionDenied(err)
	}
	if err := a.scheduleCovered(ctx, r, name); err != nil && !errors.Is(err, delayq.ErrNotFound) {
		return err
	}
	type put struct {
		schedule *delayq.Schedule
		created  bool
	}
	p, err := bounded(ctx, a.inline, func(ctx context.Context) (put, error) {
		sch, created, err := a.c.PutSchedule(ctx, name, s)
		return put{sch, created}, err
	})
	if err != nil {
		return err
	}
	if s.Job.CallbackURL != "" && a.pushed != nil {
		a.pushed(s.Topic) // push delivery starts on a new topic before its first tick is due
	}
	status := http.StatusOK
	if p.created {
		status = http.StatusCreated
	}
	a.writeJSON(w, status, apiv1.NewSchedule(p.schedule))
	return nil
}

// scheduleSpec converts q into a ScheduleSpec that the library has validated against the
// server's limits, with a job template whose callback_url the server's policy accepts. As for
// an enqueue (spec), what is checked here is only what the wire form shows.
func (a *api) scheduleSpec(ctx context.Context, q *apiv1.ScheduleRequest) (delayq.ScheduleSpec, error) {
	s := delayq.ScheduleSpec{
		Cron:     value(q.Cron),
		TimeZone: value(q.Timezone),
		Topic:    value(q.Topic),
		Missed:   delayq.MissedPolicy(value(q.Missed)),
	}
	var err error
	if q.Job != nil {
		// Each tick's job is enqueued once, under the schedule's own id for the tick: there is
		// no later enqueue of it for an id kept taken to refuse, and no job of another's to
		// keep or replace.
		switch {
		case q.Job.UniqueForMs != nil:
			return s, invalidf("job.unique_for_ms", "a tick's job is enqueued once, with an id of its own (<name>@<tick time>)")
		case q.Job.OnConflict != nil:
			return s, invalidf("job.on_conflict", "a tick's job is enqueued once, with an id of its own (<name>@<tick time>)")
		}
		if s.Job, err = specOf(q.Job); err != nil {
			return s, inJob(err)
		}
	}
	if q.StartAt != nil {
		if s.StartAt, err = timeField("start_at", *q.StartAt); err != nil {
			return s, err
		}
	}
	if q.EndAt != nil {
		if s.EndAt, err = timeField("end_at", *q.EndAt); err != nil {
			return s, err
		}
	}
	if err := s.Validate(a.lim); err != nil {
		return s, err
	}
	if q.Job != nil && q.Job.CallbackURL != nil {
		if err := a.checkCallbackPolicy(ctx, *q.Job.CallbackURL, a.newCallbackChecker()); err != nil {
			return s, inJob(err)
		}
	}
	return s, nil
}

// value returns *p, or "" for nil.
func value(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// inJob names a field of the wire form's job template as a field of the schedule: ttr_ms is
// job.ttr_ms.
func inJob(err error) error {
	var inv *delayq.InvalidError
	if errors.As(err, &inv) {
		return invalidf("job."+inv.Field, "%s", inv.Reason)
	}
	return err
}

// getSchedule is GET /v1/schedules/{name}: a token bound to some topics reads only the
// schedules of its topics.
func (a *api) getSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := scheduleParam(r)
	if err != nil {
		return err
	}
	ctx, cancel := a.storeContext(r)
	defer cancel()
	sch, err := bounded(ctx, a.inline, func(ctx context.Context) (*delayq.Schedule, error) { return a.c.GetSchedule(ctx, name) })
	if err != nil {
		return err
	}
	if err := access.PrincipalOf(r.Context()).Allowed(access.Read, sch.Spec.Topic); err != nil {
		return permissionDenied(err)
	}
	a.writeJSON(w, http.StatusOK, apiv1.NewSchedule(sch))
	return nil
}

// pauseSchedule is POST /v1/schedules/{name}/pause.
func (a *api) pauseSchedule(w http.ResponseWriter, r *http.Request) error {
	return a.scheduleAction(w, r, a.c.PauseSchedule)
}

// resumeSchedule is POST /v1/schedules/{name}/resume.
func (a *api) resumeSchedule(w http.ResponseWriter, r *http.Request) error {
	return a.scheduleAction(w, r, a.c.ResumeSchedule)
}

// scheduleAction calls do on the {name} schedule, once the request's token is found to cover
// its topic, and answers the schedule it returns.
func (a *api) scheduleAction(w http.ResponseWriter, r *http.Request, do func(context.Context, string) (*delayq.Schedule, error)) error {
	name, err := scheduleParam(r)
	if err != nil {
		return err
	}
	ctx, cancel := a.storeContext(r)
	defer cancel()
	if err := a.scheduleCovered(ctx, r, name); err != nil {
		return err
	}
	sch, err := bounded(ctx, a.inline, func(ctx context.Context) (*delayq.Schedule, error) { return do(ctx, name) })
	if err != nil {
		return err
	}
	a.writeJSON(w, http.StatusOK, apiv1.NewSchedule(sch))
	return nil
}

// scheduleCovered returns nil when the request's token covers the topic of schedule name, or
// the 403 that says it does not: the schedule routes name no topic, and a token bound to some
// topics sees and touches only their schedules.
func (a *api) scheduleCovered(ctx context.Context, r *http.Request, name string) error {
	p := access.PrincipalOf(r.Context())
	if p == nil || len(p.Topics) == 0 {
		return nil
	}
	sch, err := bounded(ctx, a.inline, func(ctx context.Context) (*delayq.Schedule, error) { return a.c.GetSchedule(ctx, name) })
	if err != nil {
		return err
	}
	if err := p.Allowed(access.Read, sch.Spec.Topic); err != nil {
		return permissionDenied(err)
	}
	return nil
}

// listSchedules is GET /v1/schedules.
func (a *api) listSchedules(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := a.storeContext(r)
	defer cancel()
	list, err := bounded(ctx, a.inline, a.c.Schedules)
	if err != nil {
		return err
	}
	// A token bound to some topics lists only their schedules.
	if p := access.PrincipalOf(r.Context()); p != nil {
		list = slices.DeleteFunc(list, func(s delayq.Schedule) bool { return !p.Covers(s.Spec.Topic) })
	}
	a.writeJSON(w, http.StatusOK, apiv1.NewSchedules(list))
	return nil
}

// deleteSchedule is DELETE /v1/schedules/{name}.
func (a *api) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := scheduleParam(r)
	if err != nil {
		return err
	}
	ctx, cancel := a.storeContext(r)
	defer cancel()
	if err := a.scheduleCovered(ctx, r, name); err != nil {
		return err
	}
	if err := boundedErr(ctx, a.inline, func(ctx context.Context) error { return a.c.DeleteSchedule(ctx, name) }); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
