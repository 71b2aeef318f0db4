package apiv1

import (
	"encoding/json"
	"errors"
	"fmt"
)

// EnqueueRequest is one job to enqueue, alone or as an item of a batch. Nil fields were not
// given and take the server's defaults.
type EnqueueRequest struct {
	ID *string `json:"id,omitempty"`
	// Body is a JSON payload; the server keeps its text as sent. Give Body or BodyBase64.
	Body json.RawMessage `json:"body,omitempty"`
	// BodyBase64 is a binary payload in standard base64.
	BodyBase64 *string `json:"body_base64,omitempty"`
	// DelayMs makes the job due this long after the server receives it.
	DelayMs *int64 `json:"delay_ms,omitempty"`
	// RunAt is an RFC 3339 due time instead of DelayMs, kept as the text the caller sent.
	RunAt      *string `json:"run_at,omitempty"`
	TTRMs      *int64  `json:"ttr_ms,omitempty"`
	MaxRetries *int64  `json:"max_retries,omitempty"`
	// MaxSnoozes is how many times a consumer may release the job for later before the next
	// such release makes it dead (an extension); absent or 0 for no limit.
	MaxSnoozes *int64 `json:"max_snoozes,omitempty"`
	// BackoffMs is the delay before retry n, element n-1; the last repeats.
	BackoffMs   []int64 `json:"backoff_ms,omitempty"`
	Priority    *int64  `json:"priority,omitempty"`
	CallbackURL *string `json:"callback_url,omitempty"`
	// Headers are kept with the job and returned with it (an extension): HTTP-token names,
	// compared without case and returned in lower case; UTF-8 values.
	Headers map[string]string `json:"headers,omitempty"`
	// UniqueForMs keeps the job's id taken this long after the job ends: an enqueue of it
	// answers 409 already_done until then. Absent: the topic's default, else the server's; 0
	// for none. Needs an id.
	UniqueForMs *int64 `json:"unique_for_ms,omitempty"`
	// OnConflict is what to do when a job with the id exists: "reject" (the default: 409
	// already_exists), "keep" (200 with the job as it is) or "replace" (200 with a delayed or
	// ready job replaced in place; 409 failed_precondition when reserved or dead). Needs an id.
	OnConflict *string `json:"on_conflict,omitempty"`
}

// Encode writes r with Body first and byte for byte, where encoding/json would compact it and
// escape HTML in it: the server keeps a body's JSON text as it was sent.
func (r *EnqueueRequest) Encode() ([]byte, error) {
	rest := *r
	rest.Body = nil
	out, err := json.Marshal(&rest)
	if err != nil || r.Body == nil {
		return out, err
	}
	if !json.Valid(r.Body) {
		return nil, errors.New("apiv1: the body is not valid JSON")
	}
	body := append([]byte(`{"body":`), r.Body...)
	if len(out) > 2 {
		body = append(body, ',')
	}
	return append(body, out[1:]...), nil
}

// BatchRequest is the body of a batch enqueue. Its items are EnqueueRequests, kept as JSON
// text so that the server decodes each alone and a bad one fails alone.
type BatchRequest struct {
	Jobs []json.RawMessage `json:"jobs"`
}

// Encode writes r with each item byte for byte; each must be valid JSON.
func (r *BatchRequest) Encode() ([]byte, error) {
	out := []byte(`{"jobs":[`)
	for i, j := range r.Jobs {
		if !json.Valid(j) {
			return nil, fmt.Errorf("apiv1: item %d of the batch is not valid JSON", i)
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, j...)
	}
	return append(out, "]}"...), nil
}

// BatchResponse is the answer to a batch enqueue: one result per item, in request order.
type BatchResponse struct {
	Results []BatchResult `json:"results"`
}

// BatchResult is one item of a batch answer: the job, or why it was not added.
type BatchResult struct {
	Job   *Job   `json:"job,omitempty"`
	Error *Error `json:"error,omitempty"`
}

// RescheduleRequest is the body of PATCH on a job: DelayMs or RunAt.
type RescheduleRequest struct {
	DelayMs *int64 `json:"delay_ms,omitempty"`
	// RunAt is an RFC 3339 due time, kept as the text the caller sent.
	RunAt *string `json:"run_at,omitempty"`
}
