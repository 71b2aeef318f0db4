package apiclient

import (
	"fmt"

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
