package apiv1

// Error is the error member of an error answer, and of a failed batch item.
type Error struct {
	// Code is the API's error code, such as invalid_argument or lease_lost.
	Code string `json:"code"`
	// Message explains the error to a person.
	Message string `json:"message"`
	// Outcome and EndedAt say, for already_done, how the job that keeps the id ended
	// ("acked", "cancelled" or "dead") and when.
	Outcome string `json:"outcome,omitempty"`
	EndedAt *Time  `json:"ended_at,omitempty"`
}

// Error returns "<code>: <message>", or the code alone when there is no message.
func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

// ErrorResponse is the body of every answer with a status that is not 2xx.
type ErrorResponse struct {
	Error Error `json:"error"`
}
