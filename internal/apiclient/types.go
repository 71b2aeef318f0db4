package apiclient

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// timeLayout is the API's time format: RFC 3339 with milliseconds, in UTC.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// Time is a time as the API writes it; it marshals back in the same form.
type Time struct{ time.Time }

// MarshalJSON writes the time in the API's format.
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.UTC().Format(timeLayout) + `"`), nil
}

// UnmarshalJSON reads an RFC 3339 time.
func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("apiclient: time: %w", err)
	}
	p, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("apiclient: time: %w", err)
	}
	t.Time = p
	return nil
}

// String returns the time in the API's format.
func (t Time) String() string { return t.UTC().Format(timeLayout) }

// Job is a job as the API returns it.
type Job struct {
	Topic string `json:"topic"`
	ID    string `json:"id"`
	// State is delayed, ready, reserved or dead.
	State string `json:"state"`
	// Body is the JSON payload, as the producer sent it; nil for a binary payload.
	Body json.RawMessage `json:"body,omitempty"`
	// BodyBase64 is the binary payload, in standard base64; nil for a JSON payload.
	BodyBase64    *string `json:"body_base64,omitempty"`
	RunAt         Time    `json:"run_at"`
	CreatedAt     Time    `json:"created_at"`
	Attempts      int     `json:"attempts"`
	MaxRetries    int     `json:"max_retries"`
	TTRMs         int64   `json:"ttr_ms"`
	BackoffMs     []int64 `json:"backoff_ms,omitempty"`
	Priority      int     `json:"priority"`
	CallbackURL   string  `json:"callback_url,omitempty"`
	LastError     string  `json:"last_error,omitempty"`
	LeaseDeadline *Time   `json:"lease_deadline,omitempty"`
	// Lease is the token to ack, nack, touch or release a job returned by Reserve.
	Lease  string `json:"lease,omitempty"`
	DiedAt *Time  `json:"died_at,omitempty"`
}

// Payload returns the job's body bytes: the JSON text, or the decoded binary payload.
func (j *Job) Payload() ([]byte, error) {
	if j.BodyBase64 != nil {
		b, err := base64.StdEncoding.DecodeString(*j.BodyBase64)
		if err != nil {
			return nil, fmt.Errorf("apiclient: body_base64 of job %s: %w", j.ID, err)
		}
		return b, nil
	}
	return j.Body, nil
}

// JobRequest is a job to enqueue. Zero fields are left out of the request, so the server's
// defaults apply.
type JobRequest struct {
	// ID is unique within the topic while the job exists; empty: the server makes one.
	ID string
	// Body is a JSON payload, sent verbatim.
	Body json.RawMessage
	// Binary is a binary payload, sent as body_base64 when non-nil. Give Body or Binary.
	Binary []byte
	// Delay makes the job due this long after the server receives it.
	Delay time.Duration
	// RunAt is an absolute due time instead of Delay.
	RunAt time.Time
	// TTR is the lease length once reserved.
	TTR time.Duration
	// MaxRetries is the number of retries after the first attempt; nil: the server's default.
	MaxRetries *int
	// Backoff is the delay before each retry; nil: the server's default.
	Backoff []time.Duration
	// Priority orders due jobs, higher first.
	Priority int
	// CallbackURL makes the job a push job, POSTed there by the server when due.
	CallbackURL string
}

// jobRequestJSON is a JobRequest on the wire.
type jobRequestJSON struct {
	ID          string  `json:"id,omitempty"`
	BodyBase64  *string `json:"body_base64,omitempty"`
	DelayMs     int64   `json:"delay_ms,omitempty"`
	RunAt       *Time   `json:"run_at,omitempty"`
	TTRMs       int64   `json:"ttr_ms,omitempty"`
	MaxRetries  *int    `json:"max_retries,omitempty"`
	BackoffMs   []int64 `json:"backoff_ms,omitempty"`
	Priority    int     `json:"priority,omitempty"`
	CallbackURL string  `json:"callback_url,omitempty"`
}

// MarshalJSON writes the request in the API's field names and units. (encoding/json then
// compacts the body's white space; the Client's own methods send the body exactly as given.)
func (r JobRequest) MarshalJSON() ([]byte, error) {
	return r.encode()
}

// encode writes the request with Body spliced in byte for byte, as the API keeps the JSON
// text of a body as it was sent.
func (r JobRequest) encode() ([]byte, error) {
	w := jobRequestJSON{
		ID: r.ID, DelayMs: r.Delay.Milliseconds(), TTRMs: r.TTR.Milliseconds(),
		MaxRetries: r.MaxRetries, Priority: r.Priority, CallbackURL: r.CallbackURL,
	}
	if r.Binary != nil {
		s := base64.StdEncoding.EncodeToString(r.Binary)
		w.BodyBase64 = &s
	}
	if !r.RunAt.IsZero() {
		w.RunAt = &Time{r.RunAt}
	}
	if r.Backoff != nil {
		w.BackoffMs = make([]int64, len(r.Backoff))
		for i, d := range r.Backoff {
			w.BackoffMs[i] = d.Milliseconds()
		}
	}
	rest, err := json.Marshal(w)
	if err != nil || r.Body == nil {
		return rest, err
	}
	if !json.Valid(r.Body) {
		return nil, fmt.Errorf("apiclient: the body of job %q is not valid JSON", r.ID)
	}
	out := append([]byte(`{"body":`), r.Body...)
	if len(rest) > 2 {
		out = append(out, ',')
	}
	return append(out, rest[1:]...), nil
}

// BatchResult is one item of a batch enqueue: the job, or why it was not added.
type BatchResult struct {
	Job   *Job   `json:"job,omitempty"`
	Error *Error `json:"error,omitempty"`
}

// TopicStats are a topic's job counts by state.
type TopicStats struct {
	Name     string `json:"name"`
	Delayed  int64  `json:"delayed"`
	Ready    int64  `json:"ready"`
	Reserved int64  `json:"reserved"`
	Dead     int64  `json:"dead"`
	// NextRunAt is the earliest due time of a pending job; nil when none is pending.
	NextRunAt *Time `json:"next_run_at"`
	// OldestReadyMs is how long the oldest ready job has waited.
	OldestReadyMs int64 `json:"oldest_ready_ms"`
}

// DeadPage is one page of a topic's dead letters.
type DeadPage struct {
	Jobs []*Job `json:"jobs"`
	// NextCursor fetches the next page; empty on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// ReserveRequest shapes a reserve. Zero fields take the server's defaults.
type ReserveRequest struct {
	// Max is the most jobs to lease; defaults to 1.
	Max int
	// Wait is how long to wait for a job to become due (a long poll).
	Wait time.Duration
	// TTR overrides each job's lease length.
	TTR time.Duration
}

// NackRequest says how a failed attempt is retried.
type NackRequest struct {
	// Error is kept as the job's last_error.
	Error string
	// Delay, when set, is the wait before the retry instead of the job's backoff step.
	Delay *time.Duration
	// Dead sends the job to the dead letters at once.
	Dead bool
}

// Error is an error answer of the API.
type Error struct {
	// Status is the HTTP status.
	Status int `json:"-"`
	// Code is the API's error code, such as not_found or lease_lost.
	Code string `json:"code"`
	// Message is the server's explanation.
	Message string `json:"message"`
}

// Error returns "<code>: <message>".
func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

// statusCodes names the API's code of each status, for answers without an error body (a
// proxy's, say).
var statusCodes = map[int]string{
	400: "invalid_argument", 401: "unauthenticated", 403: "permission_denied", 404: "not_found",
	409: "failed_precondition", 413: "payload_too_large", 415: "unsupported_media_type",
	500: "internal", 502: "unavailable", 503: "unavailable", 504: "unavailable",
}

// codeForStatus returns the API's code for an answer with no error body.
func codeForStatus(status int) string {
	if c, ok := statusCodes[status]; ok {
		return c
	}
	return fmt.Sprintf("http_%d", status)
}
