package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/delayq/delayq"
)

// limitsInput is the limits form as typed: each field empty for no limit of its kind.
type limitsInput struct {
	Rate, Period, Concurrency string
}

func readLimitsInput(form url.Values) limitsInput {
	return limitsInput{
		Rate:        strings.TrimSpace(form.Get("rate")),
		Period:      strings.TrimSpace(form.Get("period")),
		Concurrency: strings.TrimSpace(form.Get("concurrency")),
	}
}

// limits reads the form's limits; the library judges whether the topic takes them.
func (in limitsInput) limits() (delayq.TopicLimits, error) {
	rate, err := atoiOrNone(in.Rate)
	if err != nil {
		return delayq.TopicLimits{}, &httpError{http.StatusBadRequest, "rate: want a whole number of deliveries, or nothing for no rate limit"}
	}
	conc, err := atoiOrNone(in.Concurrency)
	if err != nil {
		return delayq.TopicLimits{}, &httpError{http.StatusBadRequest, "concurrency: want a whole number of jobs, or nothing for no limit"}
	}
	var period time.Duration
	if in.Period != "" {
		if period, err = time.ParseDuration(in.Period); err != nil {
			return delayq.TopicLimits{}, &httpError{http.StatusBadRequest, "period: want a duration such as 1s, 500ms or 1m, or nothing without a rate"}
		}
	}
	return delayq.TopicLimits{Rate: rate, Period: period, Concurrency: conc}, nil
}

// atoiOrNone reads a whole number; "" is 0, none.
func atoiOrNone(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	return strconv.Atoi(s)
}

// topicActions are the actions on a topic itself, by the name in their path.
var topicActions = map[string]func(ctx context.Context, c *delayq.Client, topic string, l delayq.TopicLimits) error{
	"pause": func(ctx context.Context, c *delayq.Client, topic string, _ delayq.TopicLimits) error {
		return c.PauseTopic(ctx, topic)
	},
	"resume": func(ctx context.Context, c *delayq.Client, topic string, _ delayq.TopicLimits) error {
		return c.ResumeTopic(ctx, topic)
	},
	"limits": func(ctx context.Context, c *delayq.Client, topic string, l delayq.TopicLimits) error {
		return c.SetTopicLimits(ctx, topic, l)
	},
	// delete deletes an empty topic only: one that holds jobs is a *delayq.NotEmptyError.
	"delete": func(ctx context.Context, c *delayq.Client, topic string, _ delayq.TopicLimits) error {
		_, err := c.DeleteTopic(ctx, topic, delayq.DeleteTopicOptions{})
		return err
	},
}

// topicAction is POST /topics/{topic}/{pause|resume|limits|delete}: without confirm=yes it
// shows a confirmation; with it, it acts and goes back to the topic, or to the overview after a
// delete.
func (d *Dashboard) topicAction(w http.ResponseWriter, r *http.Request, v *view) error {
	topic, action := r.PathValue("topic"), r.PathValue("action")
	act := topicActions[action]
	if act == nil {
		return &httpError{http.StatusNotFound, fmt.Sprintf("no action %q", action)}
	}
	if err := delayq.ValidateTopic(topic); err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return &httpError{http.StatusBadRequest, "the form cannot be read"}
	}
	in, l, err := limitsOf(action, r.PostForm)
	if err != nil {
		return err
	}
	if r.PostFormValue("confirm") != "yes" {
		return d.confirm(w, v, confirmData{Action: action, Topic: topic, OnTopic: true, Limits: in, Post: topicPath(topic) + "/" + action})
	}
	ctx, cancel := d.storeContext(r)
	defer cancel()
	err = act(ctx, d.c, topic, l)
	n := changed(err)
	d.record(v.Who, "topic-"+action, n, err, topicLogged(topic, in)...)
	if err != nil {
		return err
	}
	back := topicPath(topic)
	if action == "delete" {
		back = "/"
	}
	http.Redirect(w, r, back+"?done=topic-"+action+"&n="+strconv.Itoa(n), http.StatusSeeOther)
	return nil
}

// limitsOf reads the limits of a limits action from its form, as typed and as limits; other
// actions have none.
func limitsOf(action string, form url.Values) (*limitsInput, delayq.TopicLimits, error) {
	if action != "limits" {
		return nil, delayq.TopicLimits{}, nil
	}
	in := readLimitsInput(form)
	l, err := in.limits()
	return &in, l, err
}

// topicLogged are the log attributes of an action on topic, with the limits it set, if any.
func topicLogged(topic string, in *limitsInput) []any {
	if in == nil {
		return []any{"topic", topic}
	}
	return []any{"topic", topic, "rate", in.Rate, "period", in.Period, "concurrency", in.Concurrency}
}

// changed is how many things an action that acts on one changed: 1, or 0 when it failed.
func changed(err error) int {
	if err != nil {
		return 0
	}
	return 1
}

// limitsText writes a topic's limits for a page: "" when it has none.
func limitsText(l delayq.TopicLimits) string {
	var parts []string
	if l.Rate > 0 {
		parts = append(parts, fmt.Sprintf("%d per %s", l.Rate, l.Period))
	}
	if l.Concurrency > 0 {
		parts = append(parts, fmt.Sprintf("%d at once", l.Concurrency))
	}
	return strings.Join(parts, " · ")
}
