package httpapi

import (
	"context"
	"net/http"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// The topic controls (extensions): pause, resume, limits, defaults and delete.

// pauseTopic is POST /v1/topics/{topic}/pause: the topic's jobs stay where they are and no
// consumer gets any until it is resumed. It answers the topic's stats.
func (a *api) pauseTopic(w http.ResponseWriter, r *http.Request) error {
	return a.controlTopic(w, r, a.c.PauseTopic)
}

// resumeTopic is POST /v1/topics/{topic}/resume.
func (a *api) resumeTopic(w http.ResponseWriter, r *http.Request) error {
	return a.controlTopic(w, r, a.c.ResumeTopic)
}

// setLimits is PUT /v1/topics/{topic}/limits: the body replaces every limit of the topic, a
// field left out (or 0) being no limit of its kind.
func (a *api) setLimits(w http.ResponseWriter, r *http.Request) error {
	var q apiv1.TopicLimits
	if err := readJSON(w, r, smallBytes, &q, false); err != nil {
		return err
	}
	period, err := duration("period_ms", q.PeriodMs)
	if err != nil {
		return err
	}
	l := delayq.TopicLimits{Rate: int(q.Rate), Period: period, Concurrency: int(q.Concurrency)}
	return a.controlTopic(w, r, func(ctx context.Context, topic string) error {
		return a.c.SetTopicLimits(ctx, topic, l)
	})
}

// clearLimits is DELETE /v1/topics/{topic}/limits: the topic's limits are lifted.
func (a *api) clearLimits(w http.ResponseWriter, r *http.Request) error {
	return a.controlTopic(w, r, func(ctx context.Context, topic string) error {
		if _, err := a.c.Stats(ctx, topic); err != nil {
			return err // an unknown topic is not made, to lift limits it never had
		}
		return a.c.SetTopicLimits(ctx, topic, delayq.TopicLimits{})
	})
}

// setDefaults is PUT /v1/topics/{topic}/defaults: the body replaces every default of the
// topic's jobs, a field left out (or null) leaving it to the server.
func (a *api) setDefaults(w http.ResponseWriter, r *http.Request) error {
	var q apiv1.TopicDefaults
	if err := readJSON(w, r, smallBytes, &q, false); err != nil {
		return err
	}
	var d delayq.TopicDefaults
	if q.UniqueForMs != nil {
		var err error
		if d.UniqueFor, err = uniqueFor(*q.UniqueForMs); err != nil {
			return err
		}
	}
	return a.controlTopic(w, r, func(ctx context.Context, topic string) error {
		return a.c.SetTopicDefaults(ctx, topic, d)
	})
}

// controlTopic runs op on the path's topic and answers the topic's stats as they are after
// it. A POST takes no body, or an empty object.
func (a *api) controlTopic(w http.ResponseWriter, r *http.Request, op func(ctx context.Context, topic string) error) error {
	topic, err := topicParam(r)
	if err != nil {
		return err
	}
	if r.Method == http.MethodPost {
		if err := readJSON(w, r, smallBytes, &struct{}{}, true); err != nil {
			return err
		}
	}
	ctx, cancel := a.storeContext(r)
	defer cancel()
	s, err := bounded(ctx, a.inline, func(ctx context.Context) (*delayq.TopicStats, error) {
		if err := op(ctx, topic); err != nil {
			return nil, err
		}
		return a.c.Stats(ctx, topic)
	})
	if err != nil {
		return err
	}
	a.writeJSON(w, http.StatusOK, apiv1.NewTopicStats(s))
	return nil
}

// deleteTopic is DELETE /v1/topics/{topic}[?purge=true]: an empty topic is deleted; one that
// holds jobs is 409 failed_precondition naming them, unless purge=true deletes them too. It
// answers how many jobs were deleted.
func (a *api) deleteTopic(w http.ResponseWriter, r *http.Request) error {
	topic, err := topicParam(r)
	if err != nil {
		return err
	}
	var o delayq.DeleteTopicOptions
	switch q := r.URL.Query(); q.Get("purge") {
	case "true":
		o.Purge = true
	case "false":
	default:
		if q.Has("purge") {
			return invalidf("purge", "%q is neither true nor false", q.Get("purge"))
		}
	}
	ctx, cancel := a.storeContext(r)
	defer cancel()
	n, err := bounded(ctx, a.inline, func(ctx context.Context) (int64, error) { return a.c.DeleteTopic(ctx, topic, o) })
	if err != nil {
		return err
	}
	a.writeJSON(w, http.StatusOK, apiv1.DeleteResponse{Deleted: int(n)})
	return nil
}
