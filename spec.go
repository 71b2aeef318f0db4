package delayq

import (
	"fmt"
	"time"

	"github.com/delayq/delayq/internal/store"
)

// Spec describes a job to enqueue. Only Body is needed; zero fields take the defaults.
type Spec struct {
	// ID is unique within the topic while the job exists. Empty: a time-ordered unique id is made.
	ID string
	// Body is the payload, up to Limits.MaxBody bytes.
	Body []byte
	// Format says whether Body is JSON text; it is kept and returned with the job.
	Format Format
	// Delay makes the job due this long after the Redis server receives it. Defaults to 0.
	Delay time.Duration
	// RunAt is an absolute due time instead of Delay; a past time means due now.
	RunAt time.Time
	// TTR is the lease length once reserved. Defaults to 30s.
	TTR time.Duration
	// MaxRetries is the number of retries after the first attempt before the job goes dead.
	// Zero means DefaultMaxRetries (5); set NoRetries for none. With DefaultBackoff, the five
	// default retries wait 15s, 3m, 10m, 30m and 1h, so a job that keeps failing is dead about
	// 1h43m after its first failure; MaxRetries 8 uses the whole list, up to 15h
	// (docs/consumers.md, "Retries").
	MaxRetries int
	// NoRetries sends the job to the dead letters after its first failed attempt. MaxRetries
	// must then be zero.
	NoRetries bool
	// MaxSnoozes is how many times a consumer may put the job back for later (Snooze,
	// Client.Release with a delay) before the next snooze sends it to the dead letters
	// instead, with a LastError that says so. Zero means no limit; at most Limits.MaxSnoozes.
	MaxSnoozes int
	// Backoff is the delay before each retry; nil means DefaultBackoff().
	Backoff []time.Duration
	// Priority orders due jobs: higher goes first, then earlier due time. Within ±MaxPriority.
	Priority int
	// CallbackURL makes the job a push job: a webhook dispatcher delivers it, pull consumers
	// never see it.
	CallbackURL string
	// Headers are name-value pairs kept with the job and returned with it, for the consumer
	// (trace context, say): at most MaxHeaders, of MaxHeadersBytes in all. Names are HTTP
	// tokens, kept in lower case (two that differ only by case are an error); values are UTF-8
	// without control characters other than tab. Nil or empty: none. An enqueue made inside
	// a span adds its W3C trace context as traceparent and tracestate, unless Headers has a
	// traceparent already (under any case) or no room for them (docs/observability.md).
	Headers map[string]string
	// UniqueFor keeps the job's id taken this long after the job ends (acked, cancelled, or
	// dead: from when it went dead while it lies in the dead letters, from its deletion after
	// that): an enqueue of the id meets a *DoneError (ErrDone) until then, whatever it asks,
	// and so does Get. The answer says how the job ended and when; the marker that keeps the
	// id holds no body, and expires by itself. Needs an ID; at most Limits.MaxDelay. Zero
	// takes the topic's default (SetTopicDefaults), else Config.UniqueFor; NoUniqueFor for
	// none even then.
	UniqueFor time.Duration
	// OnConflict is what the enqueue does when a job with its ID exists: ConflictReject (the
	// zero value), ConflictKeep or ConflictReplace. Needs an ID.
	OnConflict Conflict
}

// NoUniqueFor is a Spec.UniqueFor that keeps no id taken once its job ends, whatever the
// topic's or the Client's default.
const NoUniqueFor time.Duration = -1

// Conflict is what an enqueue does when a job with its id exists (Spec.OnConflict).
type Conflict int

const (
	// ConflictReject answers ErrExists and changes nothing, unless the enqueue repeats the one
	// that made the job (the same spec within Config.ReplayWindow: then it answers that job).
	ConflictReject Conflict = iota
	// ConflictKeep answers the existing job as it is, with Job.Existed set: make sure a job
	// exists, whatever it holds.
	ConflictKeep
	// ConflictReplace gives a delayed or ready job the new spec's body, headers, due time and
	// settings in place, atomically, keeping its id, creation time, attempts and snoozes and
	// counting the replace (Job.Replaces, Job.ReplacedAt): debounce, each event pushing the
	// due time on. A reserved or dead job is ErrWrongState, and stays as it was. A replace is
	// never a repeat while the job exists (each one moves it); once the job has ended, the same
	// spec again within the replay window answers the job that ran, and runs nothing twice.
	ConflictReplace
)

var conflictNames = [...]string{"reject", "keep", "replace"}

// String returns the conflict's name in the HTTP API: "reject", "keep" or "replace".
func (c Conflict) String() string {
	if c < 0 || int(c) >= len(conflictNames) {
		return fmt.Sprintf("Conflict(%d)", int(c))
	}
	return conflictNames[c]
}

// ParseConflict reads a conflict's name ("reject", "keep" or "replace"); "" is ConflictReject.
func ParseConflict(name string) (Conflict, error) {
	if name == "" {
		return ConflictReject, nil
	}
	for i, n := range conflictNames {
		if n == name {
			return Conflict(i), nil
		}
	}
	return 0, invalid("on_conflict", "%q is not reject, keep or replace", name)
}

// uniqueForMs checks a UniqueFor (a Spec's or a topic's default) against limit and returns it
// in whole milliseconds, at least 1: 0 for 0, and -1 for NoUniqueFor.
func uniqueForMs(d, limit time.Duration) (int64, error) {
	switch {
	case d < NoUniqueFor || d > limit:
		return 0, invalid("unique_for", "%s is outside 0 to %s", ms(d), ms(limit))
	case d == NoUniqueFor:
		return -1, nil
	case d > 0:
		return max(d.Milliseconds(), 1), nil
	}
	return 0, nil
}

// maxBackoffSteps bounds Spec.Backoff.
const maxBackoffSteps = 100

// Validate reports whether s is a job that a Client with limits l would accept, as an
// *InvalidError naming the first wrong field (which also matches ErrTooLarge when the body is
// over its limit). Every enqueue validates its jobs this way before anything reaches Redis;
// call it to check a job ahead of time. The callback URL is checked by ValidateCallbackURL.
func (s Spec) Validate(l Limits) error {
	_, err := l.WithDefaults().toNewJob(s, func() string { return "" })
	return err
}

// toNewJob validates s against l (defaults set) and converts it into the store's units; an empty
// id is replaced by newID().
func (l Limits) toNewJob(s Spec, newID func() string) (store.NewJob, error) {
	j := store.NewJob{
		ID:         s.ID,
		Format:     int(s.Format),
		Priority:   s.Priority,
		DelayMs:    ceilMs(s.Delay),
		MaxRetries: DefaultMaxRetries,
		TTRMs:      DefaultTTR.Milliseconds(),
		Body:       s.Body,
		Callback:   s.CallbackURL,
	}
	if j.ID != "" {
		if err := ValidateID(j.ID); err != nil {
			return j, err
		}
	}
	if s.Format != FormatBinary && s.Format != FormatJSON {
		return j, invalid("format", "unknown format %d", s.Format)
	}
	if len(s.Body) > l.MaxBody {
		return j, &InvalidError{Field: "body", Reason: fmt.Sprintf("%d bytes is over the limit of %d", len(s.Body), l.MaxBody), tooLarge: true}
	}
	if s.Delay < 0 || s.Delay > l.MaxDelay {
		return j, invalid("delay", "%s is outside 0 to %s", ms(s.Delay), ms(l.MaxDelay))
	}
	if !s.RunAt.IsZero() {
		if s.Delay != 0 {
			return j, invalid("run_at", "give a delay or a run_at, not both")
		}
		if time.Until(s.RunAt) > l.MaxDelay {
			return j, invalid("run_at", "%s is more than %s ahead", s.RunAt.Format(time.RFC3339Nano), ms(l.MaxDelay))
		}
		j.RunAtMs = ceilUnixMs(s.RunAt)
		if j.RunAtMs <= 0 {
			return j, invalid("run_at", "%s is not after 1970-01-01", s.RunAt.Format(time.RFC3339Nano))
		}
	}
	if s.TTR != 0 {
		if s.TTR < l.MinTTR || s.TTR > l.MaxTTR {
			return j, invalid("ttr", "%s is outside %s to %s", ms(s.TTR), ms(l.MinTTR), ms(l.MaxTTR))
		}
		j.TTRMs = s.TTR.Milliseconds()
	}
	switch {
	case s.NoRetries && s.MaxRetries != 0:
		return j, invalid("max_retries", "give MaxRetries or NoRetries, not both")
	case s.NoRetries:
		j.MaxRetries = 0
	case s.MaxRetries < 0 || s.MaxRetries > l.MaxRetries:
		return j, invalid("max_retries", "%d is outside 0 to %d", s.MaxRetries, l.MaxRetries)
	case s.MaxRetries > 0:
		j.MaxRetries = s.MaxRetries
	}
	if s.MaxSnoozes < 0 || s.MaxSnoozes > l.MaxSnoozes {
		return j, invalid("max_snoozes", "%d is outside 0 to %d", s.MaxSnoozes, l.MaxSnoozes)
	}
	j.MaxSnoozes = s.MaxSnoozes
	var err error
	if j.BackoffMs, err = l.backoffMs(s.Backoff); err != nil {
		return j, err
	}
	if s.Priority < -MaxPriority || s.Priority > MaxPriority {
		return j, invalid("priority", "%d is outside %d to %d", s.Priority, -MaxPriority, MaxPriority)
	}
	if s.CallbackURL != "" {
		if err := ValidateCallbackURL(s.CallbackURL); err != nil {
			return j, err
		}
	}
	if j.Headers, err = normalizeHeaders(s.Headers); err != nil {
		return j, err
	}
	if j.UniqueForMs, err = uniqueForMs(s.UniqueFor, l.MaxDelay); err != nil {
		return j, err
	}
	if s.UniqueFor != 0 && j.ID == "" {
		return j, invalid("unique_for", "needs an id: a job whose id is made for it cannot be enqueued again")
	}
	if s.OnConflict < ConflictReject || s.OnConflict > ConflictReplace {
		return j, invalid("on_conflict", "unknown conflict %d", int(s.OnConflict))
	}
	if s.OnConflict != ConflictReject && j.ID == "" {
		return j, invalid("on_conflict", "needs an id: a job whose id is made for it has no conflict")
	}
	j.OnConflict = int(s.OnConflict)
	if j.ID == "" {
		j.ID = newID()
	}
	return j, nil
}

// backoffMs validates a Spec's backoff and returns it in milliseconds; nil stays nil.
func (l Limits) backoffMs(backoff []time.Duration) ([]int64, error) {
	if backoff == nil {
		return nil, nil
	}
	if len(backoff) == 0 || len(backoff) > maxBackoffSteps {
		return nil, invalid("backoff", "must have 1 to %d steps, got %d", maxBackoffSteps, len(backoff))
	}
	out := make([]int64, len(backoff))
	for i, d := range backoff {
		if d < 0 || d > l.MaxDelay {
			return nil, invalid(fmt.Sprintf("backoff[%d]", i), "%s is outside 0 to %s", ms(d), ms(l.MaxDelay))
		}
		out[i] = ceilMs(d)
	}
	return out, nil
}

// ms writes d for error messages: in milliseconds, the HTTP API's unit, when it is a whole
// number of them, else as Go writes durations.
func ms(d time.Duration) string {
	if d%time.Millisecond != 0 {
		return d.String()
	}
	return fmt.Sprintf("%d ms", d.Milliseconds())
}

// Due times are kept in whole milliseconds; a time or delay between two is rounded up, so that
// a job is never due before the moment it was asked for.

// ceilMs returns d in milliseconds, rounded up.
func ceilMs(d time.Duration) int64 {
	ms := d.Milliseconds()
	if d > 0 && d%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// ceilUnixMs returns t as Unix milliseconds, rounded up.
func ceilUnixMs(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.UnixNano()%int64(time.Millisecond) != 0 && t.UnixNano() > 0 {
		ms++
	}
	return ms
}
