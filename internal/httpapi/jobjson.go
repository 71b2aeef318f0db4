package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/delayq/delayq"
)

// timeLayout is RFC 3339 with exactly millisecond precision; times are written in UTC.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// formatTime writes t in timeLayout, in UTC.
func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// jobJSON is a job as the API returns it.
type jobJSON struct {
	Topic      string          `json:"topic"`
	ID         string          `json:"id"`
	State      string          `json:"state"`
	Body       json.RawMessage `json:"body,omitempty"`
	BodyBase64 *string         `json:"body_base64,omitempty"`
	RunAt      string          `json:"run_at"`
	CreatedAt  string          `json:"created_at"`
	Attempts   int             `json:"attempts"`
	MaxRetries int             `json:"max_retries"`
	TTRMs      int64           `json:"ttr_ms"`
	// BackoffMs is the job's retry schedule, the default one included (an extension).
	BackoffMs     []int64 `json:"backoff_ms"`
	Priority      int     `json:"priority"`
	CallbackURL   string  `json:"callback_url,omitempty"`
	LastError     string  `json:"last_error,omitempty"`
	LeaseDeadline string  `json:"lease_deadline,omitempty"`
	Lease         string  `json:"lease,omitempty"`
	DiedAt        string  `json:"died_at,omitempty"` // an extension
}

// toJobJSON converts j, leaving out its lease. A JSON body is returned as the JSON text it was
// given; any other body (or JSON text that is not valid, which only a Go producer could have
// stored) as base64; an empty one not at all.
func toJobJSON(j *delayq.Job) *jobJSON {
	out := &jobJSON{
		Topic:       j.Topic,
		ID:          j.ID,
		State:       string(j.State),
		RunAt:       formatTime(j.RunAt),
		CreatedAt:   formatTime(j.CreatedAt),
		Attempts:    j.Attempts,
		MaxRetries:  j.MaxRetries,
		TTRMs:       j.TTR.Milliseconds(),
		Priority:    j.Priority,
		CallbackURL: j.CallbackURL,
		LastError:   j.LastError,
	}
	switch {
	case j.Format == delayq.FormatJSON && len(bytes.TrimSpace(j.Body)) > 0 && json.Valid(j.Body):
		out.Body = json.RawMessage(j.Body)
	case len(j.Body) == 0:
		// A job without a payload comes back with neither body nor body_base64.
	default:
		b := base64.StdEncoding.EncodeToString(j.Body)
		out.BodyBase64 = &b
	}
	backoff := j.Backoff
	if backoff == nil {
		backoff = delayq.DefaultBackoff()
	}
	out.BackoffMs = make([]int64, len(backoff))
	for i, d := range backoff {
		out.BackoffMs[i] = d.Milliseconds()
	}
	if !j.LeaseDeadline.IsZero() {
		out.LeaseDeadline = formatTime(j.LeaseDeadline)
	}
	if !j.DiedAt.IsZero() {
		out.DiedAt = formatTime(j.DiedAt)
	}
	return out
}

// toJobsJSON converts jobs into a list that is never null. Leases are returned only when
// withLease: to the consumer that reserved the jobs, never to readers of a job.
func toJobsJSON(jobs []*delayq.Job, withLease bool) []*jobJSON {
	out := make([]*jobJSON, 0, len(jobs))
	for _, j := range jobs {
		o := toJobJSON(j)
		if withLease {
			o.Lease = j.LeaseToken
		}
		out = append(out, o)
	}
	return out
}

// topicJSON is a topic's counts as the API returns them.
type topicJSON struct {
	Name          string  `json:"name"`
	Delayed       int64   `json:"delayed"`
	Ready         int64   `json:"ready"`
	Reserved      int64   `json:"reserved"`
	Dead          int64   `json:"dead"`
	NextRunAt     *string `json:"next_run_at"`
	OldestReadyMs int64   `json:"oldest_ready_ms"`
}

func toTopicJSON(s *delayq.TopicStats) topicJSON {
	out := topicJSON{
		Name:          s.Name,
		Delayed:       s.Delayed,
		Ready:         s.Ready,
		Reserved:      s.Reserved,
		Dead:          s.Dead,
		OldestReadyMs: s.OldestReady.Milliseconds(),
	}
	if !s.NextRunAt.IsZero() {
		t := formatTime(s.NextRunAt)
		out.NextRunAt = &t
	}
	return out
}

// writeJSON writes v as the response with status. HTML characters are not escaped, so that
// JSON bodies come back as they were sent.
func (a *api) writeJSON(w http.ResponseWriter, status int, v any) {
	_ = a.writeJSONTo(w, status, v)
}

// writeJSONTo is writeJSON that reports whether the answer could be written.
func (a *api) writeJSONTo(w http.ResponseWriter, status int, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		a.log.Error("httpapi: encoding a response", "err", err)
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":{"code":"internal","message":"internal error"}}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return err
}
