package dashboard

import (
	"context"
	"fmt"
	"html"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/access"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// schedulesPerPage bounds the schedules one page of the list shows, and reads: each holds its
// job's body, of up to a job's body limit, which the list does not show.
const schedulesPerPage = 50

// schedulesData is the schedules page's.
type schedulesData struct {
	Schedules []apiv1.Schedule
	Total     int // schedules in all
	pager
	Done *doneNote
}

// scheduleData is a schedule's page.
type scheduleData struct {
	Schedule apiv1.Schedule
	Body     body   // the body of each tick's job
	LastJob  string // the path of the last tick's job; "" before the first tick
	Done     *doneNote
}

// scheduleActions are the actions on a schedule, by the name in their path.
var scheduleActions = map[string]func(ctx context.Context, c *delayq.Client, name string) error{
	"pause": func(ctx context.Context, c *delayq.Client, name string) error {
		_, err := c.PauseSchedule(ctx, name)
		return err
	},
	"resume": func(ctx context.Context, c *delayq.Client, name string) error {
		_, err := c.ResumeSchedule(ctx, name)
		return err
	},
	"delete": func(ctx context.Context, c *delayq.Client, name string) error {
		return c.DeleteSchedule(ctx, name)
	},
}

// schedules is GET /schedules: every schedule, by name, schedulesPerPage a page (?page=).
func (d *Dashboard) schedules(w http.ResponseWriter, r *http.Request, v *view) error {
	ctx, cancel := d.storeContext(r)
	defer cancel()
	names, err := d.c.ScheduleNames(ctx)
	if err != nil {
		return err
	}
	if names, err = d.coveredSchedules(ctx, v, names); err != nil {
		return err
	}
	data := schedulesData{Total: len(names), Done: readDone(r)}
	var from, to int
	data.pager, from, to = paginate(r, len(names), schedulesPerPage)
	page, err := d.c.SchedulesNamed(ctx, names[from:to])
	if err != nil {
		return err
	}
	data.Schedules = apiv1.NewSchedules(page).Schedules
	v.Title = "Schedules"
	v.Data = data
	d.render(w, http.StatusOK, "schedules", v)
	return nil
}

// coveredSchedules returns the names of those schedules the viewer's token covers the topic
// of: all of them for a token of every topic; for one bound to some topics, they are read
// schedulesPerPage at a time and only their names kept.
func (d *Dashboard) coveredSchedules(ctx context.Context, v *view, names []string) ([]string, error) {
	p := v.principal
	if p == nil || len(p.Topics) == 0 {
		return names, nil
	}
	var kept []string
	for chunk := range slices.Chunk(names, schedulesPerPage) {
		list, err := d.c.SchedulesNamed(ctx, chunk)
		if err != nil {
			return nil, err
		}
		for _, s := range list {
			if p.Covers(s.Spec.Topic) {
				kept = append(kept, s.Name)
			}
		}
	}
	return kept, nil
}

// readSchedule reads schedule name for the viewer: a 403 when the viewer's token does not
// cover the topic it enqueues into.
func (d *Dashboard) readSchedule(ctx context.Context, v *view, name string) (*delayq.Schedule, error) {
	sch, err := d.c.GetSchedule(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := v.principal.Allowed(access.Read, sch.Spec.Topic); err != nil {
		return nil, &httpError{http.StatusForbidden, err.Error() + " on this dashboard"}
	}
	return sch, nil
}

// schedule is GET /schedules/{name}: every field of a schedule, the job its ticks enqueue, and
// its actions.
func (d *Dashboard) schedule(w http.ResponseWriter, r *http.Request, v *view) error {
	ctx, cancel := d.storeContext(r)
	defer cancel()
	sch, err := d.readSchedule(ctx, v, r.PathValue("name"))
	if err != nil {
		return err
	}
	data := scheduleData{Schedule: apiv1.NewSchedule(sch), Body: showBody(sch.Spec.Job.Body, sch.Spec.Job.Format, schedulePath(sch.Name)+"/body"), Done: readDone(r)}
	if !sch.LastTick.IsZero() {
		data.LastJob = jobPath(sch.Spec.Topic, delayq.TickID(sch.Name, sch.LastTick))
	}
	v.Title, v.Data = sch.Name, data
	d.render(w, http.StatusOK, "schedule", v)
	return nil
}

// scheduleAction is POST /schedules/{name}/{pause|resume|delete}: without confirm=yes it shows
// a confirmation; with it, it acts and goes back to the schedule, or to the list after a delete.
func (d *Dashboard) scheduleAction(w http.ResponseWriter, r *http.Request, v *view) error {
	name, action := r.PathValue("name"), r.PathValue("action")
	act := scheduleActions[action]
	if act == nil {
		return &httpError{http.StatusNotFound, fmt.Sprintf("no action %q", action)}
	}
	if r.PostFormValue("confirm") != "yes" {
		return d.confirm(w, v, confirmData{Action: action, Schedule: name, Post: schedulePath(name) + "/" + action})
	}
	ctx, cancel := d.storeContext(r)
	defer cancel()
	err := act(ctx, d.c, name)
	n := changed(err)
	d.record(v.Who, "schedule-"+action, n, err, "schedule", name)
	if err != nil {
		return err
	}
	back := schedulePath(name)
	if action == "delete" {
		back = "/schedules"
	}
	http.Redirect(w, r, back+"?done=schedule-"+action+"&n="+strconv.Itoa(n), http.StatusSeeOther)
	return nil
}

func schedulePath(name string) string { return "/schedules/" + url.PathEscape(name) }

// tickTime writes a time of a schedule (t an apiv1.Time or a *apiv1.Time) in UTC, as every
// time of the dashboard, and beside it as the wall clock reads it in the schedule's time zone
// tz, unless that is UTC: "2026-11-22T01:30:00.000Z (02:30:00 CET, Nov 22)".
func tickTime(t any, tz string) template.HTML {
	var at time.Time
	switch v := t.(type) {
	case apiv1.Time:
		at = v.Time
	case *apiv1.Time:
		if v == nil {
			return ""
		}
		at = v.Time
	default:
		return template.HTML(html.EscapeString(fmt.Sprint(t)))
	}
	utc := html.EscapeString(apiv1.FormatTime(at))
	loc := zone(tz)
	if loc == nil {
		return template.HTML(utc)
	}
	local := at.In(loc)
	return template.HTML(fmt.Sprintf(`%s <span class="zone" title="%s">(%s)</span>`, utc,
		html.EscapeString(tz), html.EscapeString(local.Format("15:04:05 MST, Jan 2"))))
}

// zones are the time zones of schedules, loaded once.
var zones sync.Map // name -> *time.Location, nil for UTC or unknown

// zone returns time zone tz, or nil for UTC or a zone this process does not know.
func zone(tz string) *time.Location {
	if tz == "" || tz == "UTC" {
		return nil
	}
	if loc, ok := zones.Load(tz); ok {
		return loc.(*time.Location)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil || loc == time.UTC {
		loc = nil
	}
	zones.Store(tz, loc)
	return loc
}
