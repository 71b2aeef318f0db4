package dashboard

import (
	"net/http"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// jobsPerPage is the length of a topic's job lists.
const jobsPerPage = 50

// states are the lists of a topic page, in the order a job goes through them.
var states = []delayq.State{delayq.StateDelayed, delayq.StateReady, delayq.StateReserved, delayq.StateDead}

// topicData is a topic page's.
type topicData struct {
	Stats  *delayq.TopicStats
	State  delayq.State
	States []delayq.State
	Jobs   []*apiv1.Job
	Cursor string // this page's cursor, "" for the first
	Next   string // the next page's cursor; "" on the last
	Done   *doneNote
	Charts []chart
}

// topic is GET /topics/{topic}: its counts and one page of its jobs in ?state= (by default
// the first state, in a job's order, that has any), from ?cursor=.
func (d *Dashboard) topic(w http.ResponseWriter, r *http.Request, v *view) error {
	name := r.PathValue("topic")
	if err := delayq.ValidateTopic(name); err != nil {
		return err
	}
	q := r.URL.Query()
	ctx, cancel := d.storeContext(r)
	defer cancel()
	stats, err := d.c.Stats(ctx, name)
	if err != nil {
		return err
	}
	state := delayq.State(q.Get("state"))
	if state == "" {
		state = firstWithJobs(stats)
	}
	jobs, next, err := d.c.Jobs(ctx, name, state, jobsPerPage, q.Get("cursor"))
	if err != nil {
		return err
	}
	rows := make([]*apiv1.Job, len(jobs))
	for i, j := range jobs {
		rows[i] = withoutBody(j)
	}
	v.Title = name
	v.Data = topicData{Stats: stats, State: state, States: states, Jobs: rows,
		Cursor: q.Get("cursor"), Next: next, Done: readDone(r), Charts: d.hist.topicCharts(name)}
	d.render(w, http.StatusOK, "topic", v)
	return nil
}

// firstWithJobs is the first state, in a job's order, in which the topic has jobs; ready when
// it has none.
func firstWithJobs(s *delayq.TopicStats) delayq.State {
	for _, st := range states {
		if stateCount(s, st) > 0 {
			return st
		}
	}
	return delayq.StateReady
}
