package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/archive"
	"github.com/delayq/delayq/cmd/delayq/internal/access"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// errNoArchive answers the history routes of a server started without an archive: the routes
// exist, so the message says what turns them on rather than "no route".
var errNoArchive = &apiError{status: http.StatusNotFound, code: codeNotFound,
	msg: "the job history archive is not configured: start delayq server with --archive postgres://…"}

// listHistory is GET /v1/history?topic=&id=&outcome=&since=&until=&limit=&cursor=.
func (a *api) listHistory(w http.ResponseWriter, r *http.Request) error {
	if a.archive == nil {
		return errNoArchive
	}
	query := r.URL.Query()
	f, err := historyFilter(query)
	if err != nil {
		return err
	}
	if f.Topic = query.Get("topic"); f.Topic != "" {
		if err := delayq.ValidateTopic(f.Topic); err != nil {
			return err
		}
	}
	// The route names no topic, so permit let every reader's token through: one bound to
	// some topics must search one of them.
	if err := access.PrincipalOf(r.Context()).AllowedFilter(access.Read, f.Topic); err != nil {
		return permissionDenied(err)
	}
	if f.ID = query.Get("id"); f.ID != "" {
		if err := delayq.ValidateID(f.ID); err != nil {
			return err
		}
	}
	return a.writeHistory(w, r, f)
}

// jobHistory is GET /v1/topics/{topic}/jobs/{id}/history: every row of one job, newest first,
// paged as /v1/history is. A job the archive has no row of has an empty history, not 404: its
// end may not have been archived yet.
func (a *api) jobHistory(w http.ResponseWriter, r *http.Request) error {
	if a.archive == nil {
		return errNoArchive
	}
	topic, id, err := jobParams(r)
	if err != nil {
		return err
	}
	f, err := historyFilter(r.URL.Query())
	if err != nil {
		return err
	}
	f.Topic, f.ID = topic, id
	return a.writeHistory(w, r, f)
}

// historyFilter reads the query parameters both history routes share: outcome, since, until,
// limit and cursor. The archive checks their values' ranges and the cursor's form.
func historyFilter(query url.Values) (archive.Filter, error) {
	f := archive.Filter{Outcome: query.Get("outcome"), Cursor: query.Get("cursor")}
	var err error
	if f.Since, err = timeParam(query, "since"); err != nil {
		return f, err
	}
	if f.Until, err = timeParam(query, "until"); err != nil {
		return f, err
	}
	if query.Has("limit") {
		n, err := strconv.ParseInt(query.Get("limit"), 10, 32)
		if err != nil {
			return f, invalidf("limit", "%q is not an integer within 1..%d", query.Get("limit"), archive.MaxLimit)
		}
		if n == 0 { // the archive reads 0 as "the default"; the API's minimum is 1
			return f, invalidf("limit", "0 is not within 1..%d", archive.MaxLimit)
		}
		f.Limit = int(n)
	}
	return f, nil
}

// timeParam reads an RFC 3339 time from query parameter name; absent is the zero time.
func timeParam(query url.Values, name string) (time.Time, error) {
	if !query.Has(name) {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, query.Get(name))
	if err != nil {
		return time.Time{}, invalidf(name, "%q is not an RFC 3339 time such as 2026-11-22T10:00:00Z", query.Get(name))
	}
	return t, nil
}

// writeHistory answers with the page of the archive's history that f selects.
func (a *api) writeHistory(w http.ResponseWriter, r *http.Request, f archive.Filter) error {
	ctx, cancel := a.storeContext(r)
	defer cancel()
	page, err := a.archive.Query(ctx, f)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	a.writeJSON(w, http.StatusOK, apiv1.NewHistoryPage(page))
	return nil
}
