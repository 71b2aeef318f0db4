package delayq

import (
	"errors"
	"fmt"

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
	// ErrClosed: the Client or Worker has been closed.
	ErrClosed = errors.New("delayq: closed")
)

// InvalidError says which field of a request is wrong and why. It matches ErrInvalid.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("delayq: invalid %s: %s", e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
