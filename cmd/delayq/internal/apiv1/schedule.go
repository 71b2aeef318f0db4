package apiv1

import (
	"encoding/json"

	"github.com/delayq/delayq"
)

// ScheduleRequest is the body of a PUT of a schedule (an extension). Nil fields were not given.
type ScheduleRequest struct {
	// Cron is a five-field cron expression or a descriptor such as @hourly or "@every 30s".
	Cron *string `json:"cron,omitempty"`
	// Timezone is an IANA time zone; UTC when absent.
	Timezone *string `json:"timezone,omitempty"`
	// Topic is where each tick's job goes.
	Topic *string `json:"topic,omitempty"`
	// Job is the template of each tick's job: the enqueue fields but id, delay_ms, run_at,
	// unique_for_ms and on_conflict.
	Job *EnqueueRequest `json:"job,omitempty"`
	// StartAt and EndAt bound the ticks: RFC 3339 times, kept as the text the caller sent.
	StartAt *string `json:"start_at,omitempty"`
	EndAt   *string `json:"end_at,omitempty"`
	// Missed is latest or skip.
	Missed *string `json:"missed,omitempty"`
}

// Encode writes r with the job's body byte for byte, as EnqueueRequest.Encode does.
func (r *ScheduleRequest) Encode() ([]byte, error) {
	rest := *r
	rest.Job = nil
	out, err := json.Marshal(&rest)
	if err != nil || r.Job == nil {
		return out, err
	}
	job, err := r.Job.Encode()
	if err != nil {
		return nil, err
	}
	body := append([]byte(`{"job":`), job...)
	if len(out) > 2 {
		body = append(body, ',')
	}
	return append(body, out[1:]...), nil
}

// Schedule is a schedule as the API returns it (an extension).
type Schedule struct {
	Name     string `json:"name"`
	Cron     string `json:"cron"`
	Timezone string `json:"timezone"`
	Topic    string `json:"topic"`
	// Job is the template of each tick's job, with every field the ticks' jobs get, backoff_ms
	// when it names one: a request that a PUT takes back as it is.
	Job     *EnqueueRequest `json:"job"`
	StartAt *Time           `json:"start_at,omitempty"`
	EndAt   *Time           `json:"end_at,omitempty"`
	Missed  string          `json:"missed"`
	Paused  bool            `json:"paused"`
	// LastTick is the latest tick whose job was enqueued; null before the first.
	LastTick *Time `json:"last_tick"`
	// SkippedTicks counts the ticks whose job id another job held already: they enqueued
	// nothing.
	SkippedTicks int64 `json:"skipped_ticks"`
	// NextRuns are the next ticks, at most five; none while paused or after end_at.
	NextRuns  []Time `json:"next_runs"`
	CreatedAt Time   `json:"created_at"`
	UpdatedAt Time   `json:"updated_at"`
}

// ScheduleList is the answer to a listing of schedules; never null.
type ScheduleList struct {
	Schedules []Schedule `json:"schedules"`
}

// NewSchedule converts s.
func NewSchedule(s *delayq.Schedule) Schedule {
	out := Schedule{
		Name:         s.Name,
		Cron:         s.Spec.Cron,
		Timezone:     s.Spec.TimeZone,
		Topic:        s.Spec.Topic,
		Job:          newTemplate(s.Spec.Job),
		StartAt:      timePtr(s.Spec.StartAt),
		EndAt:        timePtr(s.Spec.EndAt),
		Missed:       string(s.Spec.Missed),
		Paused:       s.Paused,
		LastTick:     timePtr(s.LastTick),
		SkippedTicks: s.SkippedTicks,
		NextRuns:     make([]Time, len(s.NextRuns)),
		CreatedAt:    Time{s.CreatedAt},
		UpdatedAt:    Time{s.UpdatedAt},
	}
	if out.Timezone == "" {
		out.Timezone = "UTC"
	}
	for i, t := range s.NextRuns {
		out.NextRuns[i] = Time{t}
	}
	return out
}

// NewSchedules converts schedules into a list that is never null.
func NewSchedules(schedules []delayq.Schedule) ScheduleList {
	out := ScheduleList{Schedules: make([]Schedule, 0, len(schedules))}
	for i := range schedules {
		out.Schedules = append(out.Schedules, NewSchedule(&schedules[i]))
	}
	return out
}

// newTemplate writes a schedule's job template in the enqueue fields.
func newTemplate(s delayq.Spec) *EnqueueRequest {
	ttr, retries, priority := s.TTR.Milliseconds(), int64(s.MaxRetries), int64(s.Priority)
	if s.TTR == 0 {
		ttr = delayq.DefaultTTR.Milliseconds()
	}
	if s.MaxRetries == 0 && !s.NoRetries {
		retries = delayq.DefaultMaxRetries
	}
	t := &EnqueueRequest{TTRMs: &ttr, MaxRetries: &retries, Priority: &priority, Headers: s.Headers}
	t.Body, t.BodyBase64 = encodeBody(s.Body, s.Format)
	for _, d := range s.Backoff {
		t.BackoffMs = append(t.BackoffMs, d.Milliseconds())
	}
	if s.CallbackURL != "" {
		t.CallbackURL = &s.CallbackURL
	}
	if s.MaxSnoozes != 0 {
		t.MaxSnoozes = new(int64(s.MaxSnoozes))
	}
	return t
}
