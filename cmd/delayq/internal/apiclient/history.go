package apiclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// HistoryQuery selects entries of the job history. Zero fields select everything.
type HistoryQuery struct {
	Topic string
	// ID selects one job's entries; it needs Topic.
	ID string
	// Outcome is acked, dead, cancelled, dead_deleted or failed.
	Outcome string
	// Since and Until bound the finish times: Since <= finished_at < Until.
	Since, Until time.Time
	// Limit is the page size; zero: the server's default (100).
	Limit int
	// Cursor is the NextCursor of the previous page; empty for the first page.
	Cursor string
}

// values returns the query parameters of q, without topic and id when the path names them.
func (q HistoryQuery) values(withJob bool) url.Values {
	v := url.Values{}
	set := func(name, value string) {
		if value != "" {
			v.Set(name, value)
		}
	}
	if withJob {
		set("topic", q.Topic)
		set("id", q.ID)
	}
	set("outcome", q.Outcome)
	if !q.Since.IsZero() {
		v.Set("since", apiv1.FormatTime(q.Since))
	}
	if !q.Until.IsZero() {
		v.Set("until", apiv1.FormatTime(q.Until))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	set("cursor", q.Cursor)
	return v
}

// History returns a page of the server's job history, newest first. A server without an
// archive answers with a not_found *Error.
func (c *Client) History(ctx context.Context, q HistoryQuery) (*apiv1.HistoryPage, error) {
	return c.historyPage(ctx, "/v1/history", q.values(true))
}

// JobHistory returns a page of the history of job id of topic, newest first; q's Topic and ID
// are ignored.
func (c *Client) JobHistory(ctx context.Context, topic, id string, q HistoryQuery) (*apiv1.HistoryPage, error) {
	return c.historyPage(ctx, jobPath(topic, id, "history"), q.values(false))
}

func (c *Client) historyPage(ctx context.Context, path string, v url.Values) (*apiv1.HistoryPage, error) {
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var out apiv1.HistoryPage
	if err := c.Do(ctx, http.MethodGet, path, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
