package apiclient

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

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
	// MaxSnoozes is how many snoozes the job may take before the next makes it dead; nil: no
	// limit.
	MaxSnoozes *int
	// Backoff is the delay before each retry; nil: the server's default.
	Backoff []time.Duration
	// Priority orders due jobs, higher first.
	Priority int
	// CallbackURL makes the job a push job, POSTed there by the server when due.
	CallbackURL string
	// Headers are kept with the job and returned with it; nil or empty: none.
	Headers map[string]string
	// UniqueFor keeps the job's id taken this long after the job ends: an enqueue of it is
	// already_done until then. Nil: the topic's default, else the server's; 0: none. Needs an
	// ID; sent in whole milliseconds.
	UniqueFor *time.Duration
	// OnConflict is what the enqueue does when the topic has a job with the ID: "reject" (the
	// server's default when empty), "keep" or "replace".
	OnConflict string
}

// wire returns r as the API's request.
func (r JobRequest) wire() *apiv1.EnqueueRequest {
	w := &apiv1.EnqueueRequest{
		ID:          nonZero(r.ID),
		Body:        r.Body,
		DelayMs:     nonZero(r.Delay.Milliseconds()),
		TTRMs:       nonZero(r.TTR.Milliseconds()),
		Priority:    nonZero(int64(r.Priority)),
		CallbackURL: nonZero(r.CallbackURL),
		OnConflict:  nonZero(r.OnConflict),
	}
	if r.UniqueFor != nil {
		w.UniqueForMs = new(r.UniqueFor.Milliseconds())
	}
	if r.Binary != nil {
		w.BodyBase64 = new(base64.StdEncoding.EncodeToString(r.Binary))
	}
	if !r.RunAt.IsZero() {
		w.RunAt = new(apiv1.FormatTime(r.RunAt))
	}
	if r.MaxRetries != nil {
		w.MaxRetries = new(int64(*r.MaxRetries))
	}
	if r.MaxSnoozes != nil {
		w.MaxSnoozes = new(int64(*r.MaxSnoozes))
	}
	if len(r.Headers) > 0 {
		w.Headers = r.Headers
	}
	if r.Backoff != nil {
		w.BackoffMs = make([]int64, len(r.Backoff))
		for i, d := range r.Backoff {
			w.BackoffMs[i] = d.Milliseconds()
		}
	}
	return w
}

// MarshalJSON writes the request in the API's field names and units. (encoding/json then
// compacts the body's white space; the Client's own methods send the body exactly as given.)
func (r JobRequest) MarshalJSON() ([]byte, error) {
	return r.encode()
}

// encode writes the request with Body byte for byte, as the API keeps the JSON text of a body
// as it was sent.
func (r JobRequest) encode() ([]byte, error) {
	b, err := r.wire().Encode()
	if err != nil {
		return nil, fmt.Errorf("apiclient: job %q: %w", r.ID, err)
	}
	return b, nil
}

// ScheduleRequest is a schedule to create or replace. Zero fields are left out of the request,
// so the server's defaults apply.
type ScheduleRequest struct {
	// Cron is a five-field cron expression or a descriptor such as @hourly or "@every 30s".
	Cron string
	// Timezone is an IANA time zone such as Europe/Berlin; empty: UTC.
	Timezone string
	// Topic is where each tick's job goes.
	Topic string
	// Job is the template of each tick's job; its ID, Delay and RunAt must be zero.
	Job JobRequest
	// StartAt and EndAt bound the ticks.
	StartAt, EndAt time.Time
	// Missed is latest or skip; empty: latest.
	Missed string
}

// encode writes the request, the job's body byte for byte.
func (r ScheduleRequest) encode() ([]byte, error) {
	w := &apiv1.ScheduleRequest{
		Cron: nonZero(r.Cron), Timezone: nonZero(r.Timezone), Topic: nonZero(r.Topic),
		Job: r.Job.wire(), Missed: nonZero(r.Missed),
	}
	if !r.StartAt.IsZero() {
		w.StartAt = new(apiv1.FormatTime(r.StartAt))
	}
	if !r.EndAt.IsZero() {
		w.EndAt = new(apiv1.FormatTime(r.EndAt))
	}
	b, err := w.Encode()
	if err != nil {
		return nil, fmt.Errorf("apiclient: schedule: %w", err)
	}
	return b, nil
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

// wire returns r as the API's request.
func (r ReserveRequest) wire() *apiv1.ReserveRequest {
	return &apiv1.ReserveRequest{
		Max:    nonZero(int64(r.Max)),
		WaitMs: nonZero(r.Wait.Milliseconds()),
		TTRMs:  nonZero(r.TTR.Milliseconds()),
	}
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

// wire returns r, for the job leased by lease, as the API's request.
func (r NackRequest) wire(lease string) *apiv1.NackRequest {
	w := &apiv1.NackRequest{Lease: &lease, Error: nonZero(r.Error), Dead: nonZero(r.Dead)}
	if r.Delay != nil {
		w.DelayMs = new(r.Delay.Milliseconds())
	}
	return w
}

// nonZero returns a pointer to v, or nil when v is the zero value: a field left out, so that
// the server's default applies.
func nonZero[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}
