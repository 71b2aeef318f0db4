package dashboard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/cmd/delayq/internal/access"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// searchData is the search page's.
type searchData struct {
	Query     string
	Topic     string // "" for every topic
	Found     []*apiv1.Job
	Topics    int       // topics looked in: a search by id stops at maxFound matches
	AllTopics int       // topics a search by id would look in
	Body      *bodyScan // a search of bodies, not ids
}

// search is GET /search?q=<id>[&topic=<topic>]: the jobs with exactly that id, in every topic
// or in one, the first maxFound of them; or GET /search?topic=<topic>&body=<text>: the jobs of
// one topic whose bodies hold text, in a bounded scan.
func (d *Dashboard) search(w http.ResponseWriter, r *http.Request, v *view) error {
	q := r.URL.Query()
	data := searchData{Query: strings.TrimSpace(q.Get("q")), Topic: q.Get("topic")}
	v.Title, v.Data = "Search", &data
	// The route names no topic, so page let every reader's token through: one bound to some
	// topics searches those alone.
	if data.Topic != "" {
		if err := v.principal.Allowed(access.Read, data.Topic); err != nil {
			return &httpError{http.StatusForbidden, err.Error() + " on this dashboard"}
		}
	}
	if text := q.Get("body"); text != "" && data.Topic != "" {
		ctx, cancel := d.storeContext(r)
		defer cancel()
		found, scan, err := d.searchBodies(ctx, data.Topic, text)
		if err != nil {
			return err
		}
		data.Found, data.Body = found, &scan
		d.render(w, http.StatusOK, "search", v)
		return nil
	}
	if data.Query == "" {
		d.render(w, http.StatusOK, "search", v)
		return nil
	}
	if err := delayq.ValidateID(data.Query); err != nil {
		return err
	}
	ctx, cancel := d.storeContext(r)
	defer cancel()
	topics := []string{data.Topic}
	if data.Topic == "" {
		var err error
		if topics, err = d.c.TopicNames(ctx); err != nil {
			return err
		}
		topics = slices.DeleteFunc(topics, func(t string) bool { return v.principal != nil && !v.principal.Covers(t) })
	}
	data.AllTopics = len(topics)
	for _, t := range topics {
		if len(data.Found) >= maxFound {
			break
		}
		data.Topics++
		j, err := d.c.Get(ctx, t, data.Query)
		var done *delayq.DoneError
		switch {
		case errors.As(err, &done):
			// A job that ended and keeps its id taken: its page says how and when.
			data.Found = append(data.Found, &apiv1.Job{Topic: t, ID: data.Query, State: apiv1.StateEnded})
			continue
		case errors.Is(err, delayq.ErrNotFound):
			continue
		case err != nil:
			return err
		}
		data.Found = append(data.Found, withoutBody(j))
	}
	if len(data.Found) == 1 {
		j := data.Found[0]
		http.Redirect(w, r, jobPath(j.Topic, j.ID), http.StatusSeeOther)
		return nil
	}
	d.render(w, http.StatusOK, "search", v)
	return nil
}

// A body search reads at most bodyScanLimit jobs and bodyScanBytes of their bodies, and stops
// at maxFound matches. It reads a page of jobs at a time, of at most scanPage jobs and as many
// as could hold scanPageBytes were every body as large as a body may be (8 jobs of 1 MiB): a
// page is held in memory whole, whatever its bodies are.
const (
	bodyScanLimit = 2000
	bodyScanBytes = 32 << 20
	scanPage      = 100
	scanPageBytes = 8 << 20
	maxFound      = 50
)

// maxBody is the largest body a job may have: the library's limit, which delayq server keeps.
var maxBody = delayq.Limits{}.WithDefaults().MaxBody

// bodyScan says what a body search read.
type bodyScan struct {
	Text     string
	Scanned  int
	Bytes    int64 // of the bodies read
	Total    int64 // the topic's jobs
	Complete bool  // every job was read
}

// Budget describes the bounds of a body search, for its page.
func (bodyScan) Budget() string {
	return fmt.Sprintf("%d jobs or %s of bodies", bodyScanLimit, humanBytes(bodyScanBytes))
}

// searchBodies returns the jobs of topic whose bodies contain text, reading the states in a
// job's order, a page at a time, until bodyScanLimit jobs, bodyScanBytes of bodies or maxFound
// matches.
func (d *Dashboard) searchBodies(ctx context.Context, topic, text string) ([]*apiv1.Job, bodyScan, error) {
	scan := bodyScan{Text: text}
	stats, err := d.c.Stats(ctx, topic)
	if err != nil {
		return nil, scan, err
	}
	scan.Total = stats.Delayed + stats.Ready + stats.Reserved + stats.Dead
	needle := []byte(text)
	var found []*apiv1.Job
	for _, st := range states {
		for cursor := ""; ; {
			n := min(scanPage, scanPageBytes/maxBody, bodyScanLimit-scan.Scanned, int((bodyScanBytes-scan.Bytes)/int64(maxBody)))
			if n < 1 || len(found) >= maxFound {
				return found, scan, nil
			}
			jobs, next, err := d.c.Jobs(ctx, topic, st, n, cursor)
			if err != nil {
				return nil, scan, err
			}
			for _, j := range jobs {
				scan.Scanned++
				scan.Bytes += int64(len(j.Body))
				if bytes.Contains(j.Body, needle) && len(found) < maxFound {
					found = append(found, withoutBody(j))
				}
			}
			if next == "" {
				break
			}
			cursor = next
		}
	}
	scan.Complete = true
	return found, scan, nil
}
