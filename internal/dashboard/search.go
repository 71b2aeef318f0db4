package dashboard

import (
	"errors"
	"net/http"
	"strings"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/internal/apiv1"
)

// searchData is the search page's.
type searchData struct {
	Query  string
	Topic  string // "" for every topic
	Found  []*apiv1.Job
	Topics int // topics looked in
}

// search is GET /search?q=<id>[&topic=<topic>]: the jobs with exactly that id, in every topic
// or in one.
func (d *Dashboard) search(w http.ResponseWriter, r *http.Request, v *view) error {
	q := r.URL.Query()
	data := searchData{Query: strings.TrimSpace(q.Get("q")), Topic: q.Get("topic")}
	v.Title, v.Data = "Search", &data
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
	}
	data.Topics = len(topics)
	for _, t := range topics {
		j, err := d.c.Get(ctx, t, data.Query)
		if errors.Is(err, delayq.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		data.Found = append(data.Found, apiv1.NewJob(j))
	}
	if len(data.Found) == 1 {
		j := data.Found[0]
		http.Redirect(w, r, jobPath(j.Topic, j.ID), http.StatusSeeOther)
		return nil
	}
	d.render(w, http.StatusOK, "search", v)
	return nil
}
