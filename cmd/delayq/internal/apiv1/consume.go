package apiv1

// ReserveRequest is the body of a reserve; nil fields take the server's defaults.
type ReserveRequest struct {
	// Max is the most jobs to lease; defaults to 1.
	Max *int64 `json:"max,omitempty"`
	// MaxBytes bounds the jobs' total size (an extension); at least one job is returned.
	MaxBytes *int64 `json:"max_bytes,omitempty"`
	// WaitMs is how long to wait for a job to become due (a long poll).
	WaitMs *int64 `json:"wait_ms,omitempty"`
	// TTRMs overrides each job's lease length.
	TTRMs *int64 `json:"ttr_ms,omitempty"`
}

// ReserveResponse is the answer to a reserve: the leased jobs, each with its Lease; never null.
type ReserveResponse struct {
	Jobs []*Job `json:"jobs"`
	// TopicExists (an extension) is false when the answer is empty because the topic does not
	// exist: nothing was ever enqueued to it, or it was deleted. Absent otherwise. The header
	// TopicExistsHeader says the same on every answer that knows it.
	TopicExists *bool `json:"topic_exists,omitempty"`
}

// TopicExistsHeader is the reserve answer's header that says whether the topic exists: "true"
// or "false"; absent when the server could not tell.
const TopicExistsHeader = "Delayq-Topic-Exists"

// LeaseRequest is the body of an ack.
type LeaseRequest struct {
	// Lease is the token that reserve returned with the job. Required.
	Lease *string `json:"lease,omitempty"`
}

// ReleaseRequest is the body of a release. Without DelayMs and RunAt the job is due again at
// once; with either, the release is a snooze: the job counts it, and goes dead past its
// max_snoozes.
type ReleaseRequest struct {
	// Lease is the token that reserve returned with the job. Required.
	Lease *string `json:"lease,omitempty"`
	// DelayMs makes the job due this long after the release.
	DelayMs *int64 `json:"delay_ms,omitempty"`
	// RunAt is an RFC 3339 due time instead of DelayMs.
	RunAt *string `json:"run_at,omitempty"`
}

// NackRequest is the body of a nack.
type NackRequest struct {
	// Lease is the token that reserve returned with the job. Required.
	Lease *string `json:"lease,omitempty"`
	// Error is kept as the job's last_error.
	Error *string `json:"error,omitempty"`
	// DelayMs, when given, is the wait before the retry instead of the job's backoff step.
	DelayMs *int64 `json:"delay_ms,omitempty"`
	// Dead, when true, sends the job to the dead letters at once.
	Dead *bool `json:"dead,omitempty"`
}

// TouchRequest is the body of a touch.
type TouchRequest struct {
	// Lease is the token that reserve returned with the job. Required.
	Lease *string `json:"lease,omitempty"`
	// TTRMs is the lease's new length from now; nil: the job's TTR.
	TTRMs *int64 `json:"ttr_ms,omitempty"`
}

// TouchResponse is the answer to a touch.
type TouchResponse struct {
	LeaseDeadline Time `json:"lease_deadline"`
}
