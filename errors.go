package delayq

import (
	"errors"
	"fmt"
	"time"

	"github.com/delayq/delayq/internal/store"
)

// Errors that callers branch on with errors.Is.
var (
	// ErrNotFound: there is no such job (or topic).
	ErrNotFound = store.ErrNotFound
	// ErrExists: a job with that id exists in the topic.
	ErrExists = store.ErrExists
	// ErrLeaseLost: the lease is not the job's current one: it expired, was superseded or made
	// up, or the job was cancelled.
	ErrLeaseLost = store.ErrLeaseLost
	// ErrWrongState: the operation needs a delayed or ready job, and this one is reserved or dead.
	ErrWrongState = store.ErrWrongState
	// ErrInvalid: an argument is out of its range; the error names the field and the reason.
	ErrInvalid = errors.New("delayq: invalid argument")
	// ErrTooLarge: a job's body is over Limits.MaxBody. Such an error matches ErrInvalid too.
	ErrTooLarge = errors.New("delayq: too large")
	// ErrClosed: the Client or Worker has been closed.
	ErrClosed = errors.New("delayq: closed")
	// ErrNotEmpty: a topic to delete without purging holds jobs.
	ErrNotEmpty = errors.New("delayq: topic is not empty")
	// ErrDone: the id is taken by a job that ended within its Spec.UniqueFor (a *DoneError
	// says how and when).
	ErrDone = store.ErrDone
)

// NotFoundError says which topic, which job of a topic, or which schedule does not exist. It
// matches ErrNotFound.
type NotFoundError struct {
	Topic string
	ID    string // "" when the topic itself does not exist
	// Schedule names the schedule that does not exist; Topic and ID are empty then.
	Schedule string
}

func (e *NotFoundError) Error() string { return "delayq: " + e.Message() }

// Message is the error without the package's prefix, for an API's error body.
func (e *NotFoundError) Message() string {
	if e.Schedule != "" {
		return fmt.Sprintf("schedule %q not found", e.Schedule)
	}
	if e.ID == "" {
		return fmt.Sprintf("topic %q not found", e.Topic)
	}
	return fmt.Sprintf("job %q not found in topic %q", e.ID, e.Topic)
}

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// jobNotFound names job id of topic in a not-found error; other errors pass unchanged.
func jobNotFound(err error, topic, id string) error {
	if errors.Is(err, ErrNotFound) {
		return &NotFoundError{Topic: topic, ID: id}
	}
	return err
}

// EndedError says what became of a job that Cancel found gone: it ended otherwise within
// Config.ReplayWindow of its creation (its ended marker says so; docs/states.md, "Retrying an enqueue or a cancel"). It matches
// ErrNotFound: the job is gone.
type EndedError struct {
	Topic, ID string
	Outcome   string // "acked", or "dead" (it went dead and was deleted from the dead letters)
	EndedAt   time.Time
}

func (e *EndedError) Error() string { return "delayq: " + e.Message() }

// Message is the error without the package's prefix, for an API's error body.
func (e *EndedError) Message() string {
	what := "was acked"
	if e.Outcome == "dead" {
		what = "went dead and was deleted"
	} else if e.Outcome != "acked" {
		what = "ended (" + e.Outcome + ")"
	}
	return fmt.Sprintf("job %q of topic %q %s at %s: there is nothing left to cancel",
		e.ID, e.Topic, what, e.EndedAt.UTC().Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrNotFound) true.
func (e *EndedError) Is(target error) bool { return target == ErrNotFound }

// DoneError says that a job's id is still taken by a job that ended within its Spec.UniqueFor:
// an enqueue of the id, or Get, meets it until then. It matches ErrDone.
type DoneError struct {
	Topic, ID string
	Outcome   string // "acked", "cancelled" or "dead"
	EndedAt   time.Time
}

func (e *DoneError) Error() string { return "delayq: " + e.Message() }

// Message is the error without the package's prefix, for an API's error body.
func (e *DoneError) Message() string {
	return fmt.Sprintf("job %q of topic %q is done (%s at %s) and its id stays taken for its unique_for",
		e.ID, e.Topic, e.Outcome, e.EndedAt.UTC().Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrDone) true.
func (e *DoneError) Is(target error) bool { return target == ErrDone }

// doneError names job id of topic in a store's DoneError; other errors pass unchanged.
func doneError(err error, topic, id string) error {
	var done *store.DoneError
	if errors.As(err, &done) {
		return &DoneError{Topic: topic, ID: id, Outcome: done.Outcome, EndedAt: time.UnixMilli(done.EndedMs).UTC()}
	}
	return err
}

// NotEmptyError says what a topic that DeleteTopic would not delete holds. It matches
// ErrNotEmpty.
type NotEmptyError struct {
	Topic                          string
	Delayed, Ready, Reserved, Dead int64
}

func (e *NotEmptyError) Error() string { return "delayq: " + e.Message() }

// Message is the error without the package's prefix, for an API's error body.
func (e *NotEmptyError) Message() string {
	return fmt.Sprintf("topic %q holds %d jobs (%d delayed, %d ready, %d reserved, %d dead): delete them first, or purge the topic",
		e.Topic, e.Delayed+e.Ready+e.Reserved+e.Dead, e.Delayed, e.Ready, e.Reserved, e.Dead)
}

// Is makes errors.Is(err, ErrNotEmpty) true.
func (e *NotEmptyError) Is(target error) bool { return target == ErrNotEmpty }

// InvalidError says which field of a request is wrong and why. It matches ErrInvalid, and
// ErrTooLarge when the field is a body over its limit.
type InvalidError struct {
	Field  string // the Go name in snake case: delay, run_at, ttr, backoff[2], …
	Reason string

	tooLarge bool
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("delayq: invalid %s: %s", e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalid) true, and errors.Is(err, ErrTooLarge) for a body over
// its limit.
func (e *InvalidError) Is(target error) bool {
	return target == ErrInvalid || (e.tooLarge && target == ErrTooLarge)
}

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
