package dashboard

import (
	"errors"
	"net/http"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// jobData is a job page's.
type jobData struct {
	Topic, ID string
	Job       *apiv1.Job // nil when Redis no longer has the job (Gone)
	Body      body
	Done      *doneNote
	// Gone: the page shows the job from its history alone, its fields and body as last
	// archived (Archived).
	Gone     bool
	Archived *apiv1.HistoryEntry
	History  *jobHistory // nil without an archive
	// Ended: the job ended and keeps its id taken for its unique_for, which says how and when;
	// its history shows too when the archive has it (Gone).
	Ended *apiv1.EndedJob
}

// job is GET /topics/{topic}/jobs/{id}: every field of the job, and its actions.
func (d *Dashboard) job(w http.ResponseWriter, r *http.Request, v *view) error {
	topic, id := r.PathValue("topic"), r.PathValue("id")
	ctx, cancel := d.storeContext(r)
	defer cancel()
	j, err := d.c.Get(ctx, topic, id)
	var done *delayq.DoneError
	switch {
	case errors.As(err, &done):
		return d.goneJob(w, r, v, err, apiv1.NewEndedJob(done))
	case errors.Is(err, delayq.ErrNotFound) && d.archive != nil:
		return d.goneJob(w, r, v, err, nil)
	case err != nil:
		return err
	}
	h, _ := d.readJobHistory(ctx, topic, id)
	v.Title = id
	v.Data = jobData{Topic: topic, ID: id, Job: withoutBody(j), Body: showBody(j.Body, j.Format, jobPath(topic, id)+"/body"),
		Done: readDone(r), History: h}
	d.render(w, http.StatusOK, "job", v)
	return nil
}

// withoutBody is j in the API's model without its body, which a page shows through showBody,
// within its bounds, or not at all: a list of 50 jobs of 1 MiB would otherwise hold 50 MiB more.
func withoutBody(j *delayq.Job) *apiv1.Job {
	bare := *j
	bare.Body = nil
	return apiv1.NewJob(&bare)
}
