package apiclient

import (
	"fmt"
	"time"

	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

// Error is an error answer of the API.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is the API's error code, such as not_found or lease_lost.
	Code string
	// Message is the server's explanation.
	Message string
	// Outcome and EndedAt say, for already_done, how the job that keeps the id ended
	// ("acked", "cancelled" or "dead") and when; empty and zero for other codes.
	Outcome string
	EndedAt time.Time
}

// DoneError is what Get returns while a job that ended keeps its id taken for its
// unique_for_ms: the server answers the ended job, which says how and when it ended, instead
// of the job.
type DoneError struct {
	Job apiv1.EndedJob
}

// Error says which job ended, how and when.
func (e *DoneError) Error() string {
	return fmt.Sprintf("job %q of topic %q ended (%s at %s) and its id stays taken for its unique_for",
		e.Job.ID, e.Job.Topic, e.Job.Outcome, e.Job.EndedAt)
}

// Error returns "<code>: <message>".
func (e *Error) Error() string {
	return (&apiv1.Error{Code: e.Code, Message: e.Message}).Error()
}

// statusCodes names the API's code of each status, for answers without an error body (a
// proxy's, say).
var statusCodes = map[int]string{
	400: "invalid_argument", 401: "unauthenticated", 403: "permission_denied", 404: "not_found",
	409: "failed_precondition", 413: "payload_too_large", 415: "unsupported_media_type",
	500: "internal", 502: "unavailable", 503: "unavailable", 504: "unavailable",
}

// codeForStatus returns the API's code for an answer with no error body.
func codeForStatus(status int) string {
	if c, ok := statusCodes[status]; ok {
		return c
	}
	return fmt.Sprintf("http_%d", status)
}
