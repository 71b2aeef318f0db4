package delayq

import (
	"math"
	"net/url"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/delayq/delayq/internal/store"
)

// State is where a job is in its life; see docs/states.md.
type State string

// The states of a job.
const (
	StateDelayed  State = "delayed"  // not yet due
	StateReady    State = "ready"    // due, waiting for a consumer
	StateReserved State = "reserved" // leased to a consumer
	StateDead     State = "dead"     // retries exhausted or dead-lettered
)

var stateNames = map[int]State{
	store.StateDelayed:  StateDelayed,
	store.StateReady:    StateReady,
	store.StateReserved: StateReserved,
	store.StateDead:     StateDead,
}

// Format says how a job's body is to be read; delayq stores the bytes as given either way.
type Format int

// Body formats. The HTTP API returns a FormatJSON body as JSON and any other as base64.
const (
	FormatBinary Format = 0
	FormatJSON   Format = 1
)

// DefaultBackoff returns the delay before each retry of a job that names no backoff: retry n
// waits element n-1, and the last element repeats. Each call returns a new slice. Its eight
// steps outnumber DefaultMaxRetries (5): a default job uses the first five, up to 1h, and a job
// with MaxRetries 8 all of them, up to 15h (docs/consumers.md, "Retries").
func DefaultBackoff() []time.Duration {
	return []time.Duration{
		15 * time.Second, 3 * time.Minute, 10 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 6 * time.Hour, 15 * time.Hour,
	}
}

// Defaults of a Spec's zero fields.
const (
	DefaultTTR        = 30 * time.Second
	DefaultMaxRetries = 5
)

// Priorities lie within ±MaxPriority.
const MaxPriority = 1000

// Job is a job as stored.
type Job struct {
	Topic      string
	ID         string
	State      State
	Body       []byte
	Format     Format
	RunAt      time.Time
	CreatedAt  time.Time
	Attempts   int // deliveries so far
	MaxRetries int
	// Snoozes counts the times a consumer put the job back for later (Snooze, Client.Release
	// with a delay), which count no attempt; MaxSnoozes is its limit, 0 for none.
	Snoozes       int
	MaxSnoozes    int
	TTR           time.Duration
	Backoff       []time.Duration // nil when the job uses DefaultBackoff
	Priority      int
	CallbackURL   string
	LastError     string
	LeaseToken    string    // on the reserved jobs Reserve returns; see Lease
	LeaseDeadline time.Time // zero unless reserved
	// LeasedAt is when this delivery was leased, by the Redis server's clock: set on the jobs
	// Reserve returns and a Worker hands to its handlers, zero elsewhere.
	LeasedAt time.Time
	DiedAt   time.Time // zero unless dead
	// Headers are the job's headers, names in lower case (see Spec.Headers); nil when none.
	Headers map[string]string
	// BeanstalkdPriority is the priority of a job put, released or buried through the
	// beanstalkd front end (docs/beanstalkd.md): 0 to 2^32-1, most urgent first, ranking it
	// among the due jobs before every job of priority 0 and after every higher one, and among
	// its like by id. Nil for other jobs. Priority is then 0.
	BeanstalkdPriority *uint32
	// UniqueFor is how long the job's id stays taken once it ends (Spec.UniqueFor, or the
	// default it took); 0 for not at all.
	UniqueFor time.Duration
	// Replaces counts the enqueues that replaced the job (ConflictReplace); ReplacedAt is when
	// the last one did, zero when none did.
	Replaces   int
	ReplacedAt time.Time
	// Existed is set on a job Enqueue returned when its id existed and Spec.OnConflict kept
	// the job as it was (ConflictKeep) or replaced it (ConflictReplace); false when the
	// enqueue added the job (or repeats the one that did).
	Existed bool
}

// NoRetryLimit is the MaxRetries of a job without a retry limit: a job put through the
// beanstalkd front end (docs/beanstalkd.md), which its failures never make dead. A Spec's
// MaxRetries stays within Limits.MaxRetries, far below it.
const NoRetryLimit = math.MaxInt32

// Lease is the lease of a job that Reserve returned, for Ack, Nack, Touch and Release.
func (j *Job) Lease() Lease { return Lease{Topic: j.Topic, ID: j.ID, Token: j.LeaseToken} }

// Lateness is how long after it was due this delivery was leased: from the later of RunAt and
// CreatedAt (a run_at in the past makes a job due when it is enqueued, not before) to
// LeasedAt, by the Redis server's clock; never negative. It is zero for a job not leased.
func (j *Job) Lateness() time.Duration {
	if j.LeasedAt.IsZero() {
		return 0
	}
	due := j.RunAt
	if j.CreatedAt.After(due) {
		due = j.CreatedAt
	}
	return max(j.LeasedAt.Sub(due), 0)
}

func jobFromRecord(topic string, r store.Record) *Job {
	j := &Job{
		Topic:       topic,
		ID:          r.ID,
		State:       stateNames[r.State],
		Body:        r.Body,
		Format:      Format(r.Format),
		RunAt:       time.UnixMilli(r.RunAtMs).UTC(),
		CreatedAt:   time.UnixMilli(r.CreatedMs).UTC(),
		Attempts:    r.Attempts,
		MaxRetries:  r.MaxRetries,
		Snoozes:     r.Snoozes,
		MaxSnoozes:  r.MaxSnoozes,
		TTR:         time.Duration(r.TTRMs) * time.Millisecond,
		Priority:    r.Priority,
		CallbackURL: r.Callback,
		LastError:   r.LastError,
		LeaseToken:  r.Lease,
		Headers:     r.Headers,
	}
	if r.Priority >= store.RankBase {
		pri := uint32(r.Priority - store.RankBase)
		j.Priority, j.BeanstalkdPriority = 0, &pri
	}
	if r.BackoffMs != nil {
		j.Backoff = make([]time.Duration, len(r.BackoffMs))
		for i, ms := range r.BackoffMs {
			j.Backoff[i] = time.Duration(ms) * time.Millisecond
		}
	}
	if r.LeaseDeadlineMs != 0 {
		j.LeaseDeadline = time.UnixMilli(r.LeaseDeadlineMs).UTC()
	}
	if r.DiedMs != 0 {
		j.DiedAt = time.UnixMilli(r.DiedMs).UTC()
	}
	if r.UniqueForMs > 0 {
		j.UniqueFor = time.Duration(r.UniqueForMs) * time.Millisecond
	}
	if r.ReplacedMs != 0 {
		j.Replaces, j.ReplacedAt = r.Replaces, time.UnixMilli(r.ReplacedMs).UTC()
	}
	return j
}

// topicPattern is the rule a topic name follows; validTopic applies it without a regular
// expression, which every API call would otherwise run (a few microseconds each time).
const topicPattern = `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`

func validTopic(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// ValidateTopic reports whether topic is a valid topic name.
func ValidateTopic(topic string) error {
	if !validTopic(topic) {
		return invalid("topic", "%q must match %s", topic, topicPattern)
	}
	return nil
}

// BatchPathSegment is the last segment of the HTTP API's batch enqueue path; it is not a job id.
const BatchPathSegment = "batch"

// ValidateID reports whether id is a valid job id: 1 to 256 bytes of printable UTF-8 with no
// white space, other than ".", ".." and "/", which a URL cannot carry as a path segment (HTTP
// routers and clients resolve the first two as dot-segments, RFC 3986 §5.2.4, and Go's router
// reads a lone escaped slash as a trailing one), and "batch", whose path is the HTTP API's
// batch endpoint: a job with such an id could never be addressed over HTTP.
func ValidateID(id string) error {
	if id == "" || len(id) > 256 {
		return invalid("id", "must be 1 to 256 bytes, got %d", len(id))
	}
	if id == "." || id == ".." {
		return invalid("id", "%q cannot be used: a URL path resolves it as a dot-segment, so the job could not be addressed over HTTP", id)
	}
	if id == "/" {
		return invalid("id", `"/" cannot be used: as a URL path segment it reads as a trailing slash, so the job could not be addressed over HTTP`)
	}
	if id == BatchPathSegment {
		return invalid("id", "%q cannot be used: /v1/topics/{topic}/jobs/%s is the HTTP API's batch endpoint, so the job could not be addressed over HTTP", id, id)
	}
	if !utf8.ValidString(id) {
		return invalid("id", "must be UTF-8")
	}
	for _, r := range id {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return invalid("id", "has the character %q: printable characters without white space only", r)
		}
	}
	return nil
}

// MaxCallbackURL is the longest callback URL, in bytes.
const MaxCallbackURL = 2048

// ValidateCallbackURL reports whether raw can be a job's callback URL: an absolute http or https
// URL of at most MaxCallbackURL bytes, without a user name or password, which would be logged
// and returned with the job.
func ValidateCallbackURL(raw string) error {
	if len(raw) > MaxCallbackURL {
		return invalid("callback_url", "longer than %d bytes", MaxCallbackURL)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalid("callback_url", "%q is not an http or https URL", raw)
	}
	if u.User != nil {
		return invalid("callback_url", "must not carry a user name or password: it would be logged and returned with the job; authenticate the request by its signature instead")
	}
	return nil
}
