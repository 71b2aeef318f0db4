package apiv1

import (
	"encoding/json"

	"github.com/delayq/delayq"
	"github.com/delayq/delayq/archive"
)

// HistoryEntry is one row of a job's history in the archive (an extension): the job as it was
// when it ended (acked, dead, cancelled, dead_deleted), or when one of its attempts failed.
type HistoryEntry struct {
	Topic string `json:"topic"`
	ID    string `json:"id"`
	// Outcome is acked, dead, cancelled, dead_deleted or failed.
	Outcome string `json:"outcome"`
	// Attempts counts the attempts made, the one that ended included.
	Attempts int `json:"attempts"`
	// Body and BodyBase64 are as in Job; both are left out when the archive keeps no bodies.
	Body       json.RawMessage `json:"body,omitempty"`
	BodyBase64 *string         `json:"body_base64,omitempty"`
	Priority   int             `json:"priority"`
	// BeanstalkdPriority is as in Job: set for a job put, released or buried over the
	// beanstalkd protocol, whose Priority is then 0; absent for other jobs.
	BeanstalkdPriority *uint32 `json:"beanstalkd_priority,omitempty"`
	MaxRetries         int     `json:"max_retries"`
	// Snoozes and MaxSnoozes are as in Job: absent when 0.
	Snoozes     int               `json:"snoozes,omitempty"`
	MaxSnoozes  int               `json:"max_snoozes,omitempty"`
	TTRMs       int64             `json:"ttr_ms"`
	CreatedAt   Time              `json:"created_at"`
	RunAt       Time              `json:"run_at"`
	FinishedAt  Time              `json:"finished_at"`
	LastError   string            `json:"last_error,omitempty"`
	CallbackURL string            `json:"callback_url,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
}

// HistoryPage is one page of the archive's history, newest first (an extension).
type HistoryPage struct {
	Entries []*HistoryEntry `json:"entries"`
	// NextCursor fetches the next page with the same filter; empty, and left out, on the last
	// page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// NewHistoryEntry converts one row of the archive.
func NewHistoryEntry(o *archive.Outcome) *HistoryEntry {
	e := &HistoryEntry{
		Topic:              o.Topic,
		ID:                 o.ID,
		Outcome:            o.Outcome,
		Attempts:           o.Attempts,
		Priority:           o.Priority,
		BeanstalkdPriority: o.BeanstalkdPriority,
		MaxRetries:         o.MaxRetries,
		Snoozes:            o.Snoozes,
		MaxSnoozes:         o.MaxSnoozes,
		TTRMs:              o.TTR.Milliseconds(),
		CreatedAt:          Time{o.CreatedAt},
		RunAt:              Time{o.RunAt},
		FinishedAt:         Time{o.FinishedAt},
		LastError:          o.LastError,
		CallbackURL:        o.CallbackURL,
		Headers:            o.Headers,
	}
	e.Body, e.BodyBase64 = encodeBody(o.Body, delayq.Format(o.Format))
	return e
}

// NewHistoryPage converts a page of the archive into one whose entries are never null.
func NewHistoryPage(p archive.Page) HistoryPage {
	out := HistoryPage{Entries: make([]*HistoryEntry, 0, len(p.Outcomes)), NextCursor: p.Next}
	for i := range p.Outcomes {
		out.Entries = append(out.Entries, NewHistoryEntry(&p.Outcomes[i]))
	}
	return out
}
