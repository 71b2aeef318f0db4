package apiv1

import (
	"encoding/base64"
	"encoding/json"

	"github.com/delayq/delayq"
)

// NewJob converts j, leaving out its lease.
func NewJob(j *delayq.Job) *Job {
	out := &Job{
		Topic:              j.Topic,
		ID:                 j.ID,
		State:              string(j.State),
		RunAt:              Time{j.RunAt},
		CreatedAt:          Time{j.CreatedAt},
		Attempts:           j.Attempts,
		MaxRetries:         j.MaxRetries,
		Snoozes:            j.Snoozes,
		MaxSnoozes:         j.MaxSnoozes,
		TTRMs:              j.TTR.Milliseconds(),
		Priority:           j.Priority,
		BeanstalkdPriority: j.BeanstalkdPriority,
		CallbackURL:        j.CallbackURL,
		LastError:          j.LastError,
		LeaseDeadline:      timePtr(j.LeaseDeadline),
		DiedAt:             timePtr(j.DiedAt),
		Headers:            j.Headers,
		UniqueForMs:        j.UniqueFor.Milliseconds(),
		Replaces:           j.Replaces,
		ReplacedAt:         timePtr(j.ReplacedAt),
		Existed:            j.Existed,
	}
	out.Body, out.BodyBase64 = encodeBody(j.Body, j.Format)
	backoff := j.Backoff
	if backoff == nil {
		backoff = delayq.DefaultBackoff()
	}
	out.BackoffMs = make([]int64, len(backoff))
	for i, d := range backoff {
		out.BackoffMs[i] = d.Milliseconds()
	}
	return out
}

// NewTopicDefaults converts d; nil when it sets nothing.
func NewTopicDefaults(d delayq.TopicDefaults) *TopicDefaults {
	out := &TopicDefaults{}
	switch {
	case d.UniqueFor == delayq.NoUniqueFor:
		out.UniqueForMs = new(int64)
	case d.UniqueFor > 0:
		ms := d.UniqueFor.Milliseconds()
		out.UniqueForMs = &ms
	default:
		return nil
	}
	return out
}

// NewEndedJob describes the job that keeps its id taken after it ended, within its
// unique_for.
func NewEndedJob(e *delayq.DoneError) *EndedJob {
	return &EndedJob{Topic: e.Topic, ID: e.ID, State: StateEnded, Outcome: e.Outcome, EndedAt: Time{e.EndedAt}}
}

// NewJobs converts jobs into a list that is never null. Leases are kept only when withLease:
// for the consumer that reserved the jobs, never for readers of a job.
func NewJobs(jobs []*delayq.Job, withLease bool) []*Job {
	out := make([]*Job, 0, len(jobs))
	for _, j := range jobs {
		o := NewJob(j)
		if withLease {
			o.Lease = j.LeaseToken
		}
		out = append(out, o)
	}
	return out
}

// NewWebhookPayload returns the body that delivers job to its callback URL.
func NewWebhookPayload(job *delayq.Job) *WebhookPayload {
	p := &WebhookPayload{Topic: job.Topic, ID: job.ID, Attempt: job.Attempts, RunAt: Time{job.RunAt}, Headers: job.Headers}
	p.Body, p.BodyBase64 = encodeBody(job.Body, job.Format)
	return p
}

// NewTopicStats converts s.
func NewTopicStats(s *delayq.TopicStats) TopicStats {
	return TopicStats{
		Name:          s.Name,
		Delayed:       s.Delayed,
		Ready:         s.Ready,
		Reserved:      s.Reserved,
		Dead:          s.Dead,
		NextRunAt:     timePtr(s.NextRunAt),
		OldestReadyMs: s.OldestReady.Milliseconds(),
		Paused:        s.Paused,
		Limits: TopicLimits{
			Rate: int64(s.Limits.Rate), PeriodMs: s.Limits.Period.Milliseconds(), Concurrency: int64(s.Limits.Concurrency),
		},
		Partitions:    s.Partitions,
		LeasesExpired: s.LeasesExpired,
		Defaults:      NewTopicDefaults(s.Defaults),
	}
}

// encodeBody returns a job's body as the API writes it. A JSON body is written as the JSON
// text it was given; any other (or JSON text that is not valid, which only a Go producer could
// have stored) as base64; an empty one not at all.
func encodeBody(body []byte, format delayq.Format) (json.RawMessage, *string) {
	switch {
	case format == delayq.FormatJSON && json.Valid(body):
		return json.RawMessage(body), nil
	case len(body) == 0:
		return nil, nil
	default:
		b := base64.StdEncoding.EncodeToString(body)
		return nil, &b
	}
}
