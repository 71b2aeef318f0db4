package apiv1

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/delayq/delayq"
)

// Job is a job as the API returns it: from an enqueue, a get, a reserve or a listing.
type Job struct {
	Topic string `json:"topic"`
	ID    string `json:"id"`
	// State is delayed, ready, reserved or dead.
	State string `json:"state"`
	// Body is a JSON payload, as the producer sent it; nil for a binary payload or none.
	Body json.RawMessage `json:"body,omitempty"`
	// BodyBase64 is a binary payload in standard base64; nil for a JSON payload or none.
	BodyBase64 *string `json:"body_base64,omitempty"`
	RunAt      Time    `json:"run_at"`
	CreatedAt  Time    `json:"created_at"`
	// Attempts counts the deliveries so far.
	Attempts int `json:"attempts"`
	// MaxRetries is 2147483647 (delayq.NoRetryLimit) for a job without a retry limit.
	MaxRetries int `json:"max_retries"`
	// Snoozes counts the releases that put the job back for later, which count no attempt (an
	// extension); absent when none.
	Snoozes int `json:"snoozes,omitempty"`
	// MaxSnoozes is the most snoozes the job may take before the next one makes it dead (an
	// extension); absent for no limit.
	MaxSnoozes int   `json:"max_snoozes,omitempty"`
	TTRMs      int64 `json:"ttr_ms"`
	// BackoffMs is the job's retry schedule, the default one included (an extension); the
	// server always writes it.
	BackoffMs []int64 `json:"backoff_ms"`
	Priority  int     `json:"priority"`
	// BeanstalkdPriority is the priority of a job put, released or buried over the beanstalkd
	// protocol (an extension; docs/beanstalkd.md); absent for other jobs.
	BeanstalkdPriority *uint32 `json:"beanstalkd_priority,omitempty"`
	CallbackURL        string  `json:"callback_url,omitempty"`
	LastError          string  `json:"last_error,omitempty"`
	LeaseDeadline      *Time   `json:"lease_deadline,omitempty"`
	// Lease is the token to ack, nack, touch or release a job; only a reserve returns it.
	Lease string `json:"lease,omitempty"`
	// DiedAt is when the job went dead (an extension).
	DiedAt *Time `json:"died_at,omitempty"`
	// Headers are the job's headers, names in lower case (an extension); absent when none.
	Headers map[string]string `json:"headers,omitempty"`
	// UniqueForMs is how long the job's id stays taken once it ends (an extension); absent
	// for not at all.
	UniqueForMs int64 `json:"unique_for_ms,omitempty"`
	// Replaces counts the enqueues that replaced the job (on_conflict replace), and
	// ReplacedAt is when the last one did (extensions); absent when none did.
	Replaces   int   `json:"replaces,omitempty"`
	ReplacedAt *Time `json:"replaced_at,omitempty"`
	// Existed is true on a job an enqueue answers when its id existed and on_conflict kept or
	// replaced the job (an extension): what a batch item says in place of a single enqueue's
	// 200 rather than 201. Absent elsewhere.
	Existed bool `json:"existed,omitempty"`
}

// EndedJob is what a GET of an id answers while a job that had it and ended keeps it taken
// (unique_for_ms; an extension): its state is "ended" (StateEnded), Outcome says how it ended
// ("acked", "cancelled" or "dead") and EndedAt when. Nothing else of it is kept.
type EndedJob struct {
	Topic   string `json:"topic"`
	ID      string `json:"id"`
	State   string `json:"state"`
	Outcome string `json:"outcome"`
	EndedAt Time   `json:"ended_at"`
}

// StateEnded is the state of a job that ended and keeps its id taken for its unique_for.
const StateEnded = "ended"

// NoRetryLimit tells whether the job has no retry limit: a job put over the beanstalkd
// protocol, whose max_retries is 2147483647 (delayq.NoRetryLimit).
func (j *Job) NoRetryLimit() bool { return j.MaxRetries == delayq.NoRetryLimit }

// Payload returns the job's body bytes: the JSON text, or the decoded binary payload.
func (j *Job) Payload() ([]byte, error) {
	if j.BodyBase64 != nil {
		b, err := base64.StdEncoding.DecodeString(*j.BodyBase64)
		if err != nil {
			return nil, fmt.Errorf("apiv1: body_base64 of job %s: %w", j.ID, err)
		}
		return b, nil
	}
	return j.Body, nil
}
