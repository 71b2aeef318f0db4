package dashboard

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/delayq/delayq"
)

// jobActions are the actions on one job, by the name in their path, with what they do.
var jobActions = map[string]func(ctx context.Context, c *delayq.Client, topic, id string, form url.Values) (int, error){
	"cancel": func(ctx context.Context, c *delayq.Client, topic, id string, _ url.Values) (int, error) {
		return 1, c.Cancel(ctx, topic, id)
	},
	"run-now": func(ctx context.Context, c *delayq.Client, topic, id string, _ url.Values) (int, error) {
		_, err := c.Reschedule(ctx, topic, id, 0)
		return 1, err
	},
	"reschedule": func(ctx context.Context, c *delayq.Client, topic, id string, form url.Values) (int, error) {
		delay, err := time.ParseDuration(strings.TrimSpace(form.Get("delay")))
		if err != nil || delay < 0 {
			return 0, &httpError{http.StatusBadRequest, "delay: want a duration such as 90s, 15m or 2h"}
		}
		_, err = c.Reschedule(ctx, topic, id, delay)
		return 1, err
	},
	"requeue": func(ctx context.Context, c *delayq.Client, topic, id string, _ url.Values) (int, error) {
		return c.RequeueDead(ctx, topic, []string{id})
	},
	"delete": func(ctx context.Context, c *delayq.Client, topic, id string, _ url.Values) (int, error) {
		return c.DeleteDead(ctx, topic, []string{id})
	},
}

// confirmData is the confirmation page's: the action, and the form to send again with
// confirm=yes.
type confirmData struct {
	Action string
	Topic  string
	IDs    []string
	All    bool
	Delay  string
	Post   string // where the form goes, escaped: never r.URL.Path, whose id is unescaped
	// Schedule names the schedule of a schedule's action; Topic and IDs are then empty.
	Schedule string
	// OnTopic: the action is on the topic itself (pause, resume, limits, delete), whose new limits,
	// as typed, are Limits.
	OnTopic bool
	Limits  *limitsInput
}

// doneNote says on the page an action led to what it did.
type doneNote struct {
	Action string
	N      int
}

// jobAction is POST /topics/{topic}/jobs/{id}/{action}: without confirm=yes it shows a
// confirmation; with it, it acts and goes back to the job, or to the topic when the job is gone.
func (d *Dashboard) jobAction(w http.ResponseWriter, r *http.Request, v *view) error {
	topic, id, action := r.PathValue("topic"), r.PathValue("id"), r.PathValue("action")
	act := jobActions[action]
	if act == nil {
		return &httpError{http.StatusNotFound, fmt.Sprintf("no action %q", action)}
	}
	if r.PostFormValue("confirm") != "yes" {
		return d.confirm(w, v, confirmData{Action: action, Topic: topic, IDs: []string{id},
			Delay: r.PostFormValue("delay"), Post: jobPath(topic, id) + "/" + action})
	}
	ctx, cancel := d.storeContext(r)
	defer cancel()
	n, err := act(ctx, d.c, topic, id, r.PostForm)
	d.record(v.Who, action, n, err, jobsLogged(topic, []string{id})...)
	if err != nil {
		return err
	}
	if n == 0 {
		return &httpError{http.StatusConflict, "the job is not dead (any more): nothing was done"}
	}
	back := jobPath(topic, id)
	if action == "cancel" || action == "delete" {
		back = topicPath(topic)
	}
	http.Redirect(w, r, back+"?done="+action+"&n="+strconv.Itoa(n), http.StatusSeeOther)
	return nil
}

// deadAction is POST /topics/{topic}/dead/{requeue|delete}: the dead jobs of the form's ids, or
// all of them with all=yes, after a confirmation as jobAction's.
func (d *Dashboard) deadAction(w http.ResponseWriter, r *http.Request, v *view) error {
	topic, action := r.PathValue("topic"), r.PathValue("action")
	if action != "requeue" && action != "delete" {
		return &httpError{http.StatusNotFound, fmt.Sprintf("no action %q", action)}
	}
	if err := r.ParseForm(); err != nil {
		return &httpError{http.StatusBadRequest, "the form cannot be read"}
	}
	ids, all := r.PostForm["id"], r.PostFormValue("all") == "yes"
	if len(ids) == 0 && !all {
		return &httpError{http.StatusBadRequest, "select at least one job, or all of them"}
	}
	if r.PostFormValue("confirm") != "yes" {
		return d.confirm(w, v, confirmData{Action: action, Topic: topic, IDs: ids, All: all, Post: topicPath(topic) + "/dead/" + action})
	}
	ctx, cancel := d.storeContext(r)
	defer cancel()
	n, err := d.deadOp(ctx, topic, action, ids, all)
	if all {
		ids = nil
	}
	d.record(v.Who, "dead-"+action, n, err, jobsLogged(topic, ids)...)
	if err != nil {
		return err
	}
	http.Redirect(w, r, topicPath(topic)+"?state=dead&done=dead-"+action+"&n="+strconv.Itoa(n), http.StatusSeeOther)
	return nil
}

func (d *Dashboard) deadOp(ctx context.Context, topic, action string, ids []string, all bool) (int, error) {
	switch {
	case action == "requeue" && all:
		return d.c.RequeueAllDead(ctx, topic)
	case action == "requeue":
		return d.c.RequeueDead(ctx, topic, ids)
	case all:
		return d.c.DeleteAllDead(ctx, topic)
	}
	return d.c.DeleteDead(ctx, topic, ids)
}

func (d *Dashboard) confirm(w http.ResponseWriter, v *view, c confirmData) error {
	v.Title, v.Data = "Confirm", c
	d.render(w, http.StatusOK, "confirm", v)
	return nil
}

// record logs an action, with what it acted on in attrs, and counts it.
func (d *Dashboard) record(who, action string, n int, err error, attrs ...any) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	d.actions.WithLabelValues(action, outcome).Inc()
	args := append([]any{"who", who, "action", action}, attrs...)
	d.log.Info("dashboard: action", append(args, "changed", n, "err", err)...)
}

// jobsLogged are the log attributes of an action on jobs of topic; nil ids mean all the
// topic's dead jobs.
func jobsLogged(topic string, ids []string) []any {
	const shown = 20 // ids logged per action; the count says how many there were
	jobs := slog.Any("ids", ids[:min(len(ids), shown)])
	if ids == nil {
		jobs = slog.String("ids", "all")
	}
	return []any{"topic", topic, jobs, "selected", len(ids)}
}

// readDone reads the note ?done=&n= that an action's redirect left, for known actions only.
func readDone(r *http.Request) *doneNote {
	q := r.URL.Query()
	action := q.Get("done")
	switch action {
	case "cancel", "run-now", "reschedule", "requeue", "delete", "dead-requeue", "dead-delete",
		"schedule-pause", "schedule-resume", "schedule-delete", "topic-pause", "topic-resume", "topic-limits", "topic-delete":
	default:
		return nil
	}
	n, _ := strconv.Atoi(q.Get("n"))
	return &doneNote{Action: action, N: n}
}

func topicPath(topic string) string { return "/topics/" + url.PathEscape(topic) }

func jobPath(topic, id string) string { return topicPath(topic) + "/jobs/" + url.PathEscape(id) }
