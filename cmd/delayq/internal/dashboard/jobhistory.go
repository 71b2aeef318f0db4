package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/archive"
	"github.com/delayq/delayq/cmd/delayq/internal/access"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// jobHistoryRows bounds the history a job page shows; the history page has the rest.
const jobHistoryRows = 20

// errNoArchive is the history page of a dashboard without an archive.
var errNoArchive = &httpError{http.StatusNotFound, "the job history archive is not configured: start delayq server with --archive postgres://…"}

// jobHistory is the History section of a job page.
type jobHistory struct {
	Entries []*apiv1.HistoryEntry
	More    string // the history page of the job, when it has more rows than shown
	Err     string // why the archive could not be read; the rest of the page still shows
}

// readJobHistory reads the newest rows of one job's history; nil without an archive.
func (d *Dashboard) readJobHistory(ctx context.Context, topic, id string) (*jobHistory, *archive.Outcome) {
	if d.archive == nil {
		return nil, nil
	}
	page, err := d.archive.Query(ctx, archive.Filter{Topic: topic, ID: id, Limit: jobHistoryRows})
	if err != nil {
		d.log.Warn("dashboard: reading the job history", "topic", topic, "id", id, "err", err)
		return &jobHistory{Err: "the archive cannot be read now: " + err.Error()}, nil
	}
	h := &jobHistory{Entries: apiv1.NewHistoryPage(page).Entries}
	if page.Next != "" {
		h.More = historyPath(topic, id)
	}
	var latest *archive.Outcome
	if len(page.Outcomes) > 0 {
		latest = &page.Outcomes[0]
	}
	return h, latest
}

// goneJob shows a job that Redis no longer has (acked, cancelled, or a deleted dead letter):
// how and when it ended, when it keeps its id taken (ended), and its history, when the archive
// has it. With neither, notFound stands.
func (d *Dashboard) goneJob(w http.ResponseWriter, r *http.Request, v *view, notFound error, ended *apiv1.EndedJob) error {
	topic, id := r.PathValue("topic"), r.PathValue("id")
	ctx, cancel := d.storeContext(r)
	defer cancel()
	h, latest := d.readJobHistory(ctx, topic, id)
	data := jobData{Topic: topic, ID: id, Ended: ended, History: h, Done: readDone(r)}
	switch {
	case latest != nil:
		bare := *latest
		bare.Body = nil // shown through showBody
		data.Gone, data.Archived = true, apiv1.NewHistoryEntry(&bare)
		data.Body = showBody(latest.Body, delayq.Format(latest.Format), jobPath(topic, id)+"/body")
	case ended == nil:
		return notFound
	}
	v.Title, v.Data = id, data
	d.render(w, http.StatusOK, "job", v)
	return nil
}

// historyData is the history page's.
type historyData struct {
	Topic, ID, Outcome string
	Outcomes           []string
	Entries            []*apiv1.HistoryEntry
	// First and Next link the first page of the search and the next one; "" when this page is
	// the first, or the last.
	First, Next string
}

// historyPage is GET /history?topic=&id=&outcome=&cursor=: the archive's rows, newest first, a
// page at a time.
func (d *Dashboard) historyPage(w http.ResponseWriter, r *http.Request, v *view) error {
	if d.archive == nil {
		return errNoArchive
	}
	q := r.URL.Query()
	data := &historyData{Topic: q.Get("topic"), ID: q.Get("id"), Outcome: q.Get("outcome"),
		Outcomes: []string{archive.Acked, archive.Dead, archive.Cancelled, archive.DeadDeleted, archive.Failed}}
	v.Title, v.Data = "History", data
	// The route names no topic, so page let every reader's token through: one bound to some
	// topics must search one of them.
	if err := v.principal.AllowedFilter(access.Read, data.Topic); err != nil {
		return &httpError{http.StatusForbidden, err.Error() + " on this dashboard"}
	}
	f := archive.Filter{Topic: data.Topic, ID: data.ID, Outcome: data.Outcome, Cursor: q.Get("cursor"), Limit: jobsPerPage}
	ctx, cancel := d.storeContext(r)
	defer cancel()
	page, err := d.archive.Query(ctx, f)
	var fe *archive.FilterError
	switch {
	case errors.As(err, &fe):
		return &httpError{http.StatusBadRequest, fmt.Sprintf("invalid %s: %s", fe.Field, fe.Reason)}
	case err != nil:
		d.log.Warn("dashboard: reading the job history", "err", err)
		return &httpError{http.StatusServiceUnavailable, "the archive cannot be read now: " + err.Error()}
	}
	data.Entries = apiv1.NewHistoryPage(page).Entries
	search := url.Values{}
	for name, value := range map[string]string{"topic": data.Topic, "id": data.ID, "outcome": data.Outcome} {
		if value != "" {
			search.Set(name, value)
		}
	}
	if f.Cursor != "" {
		data.First = "/history?" + search.Encode()
	}
	if page.Next != "" {
		search.Set("cursor", page.Next)
		data.Next = "/history?" + search.Encode()
	}
	d.render(w, http.StatusOK, "history", v)
	return nil
}

// historyPath is the history page of one job.
func historyPath(topic, id string) string {
	return "/history?" + url.Values{"topic": {topic}, "id": {id}}.Encode()
}
