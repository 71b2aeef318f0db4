package apiv1

import "encoding/json"

// WebhookPayload is the body POSTed to a push job's callback URL.
type WebhookPayload struct {
	Topic string `json:"topic"`
	ID    string `json:"id"`
	// Body and BodyBase64 are as in Job.
	Body       json.RawMessage `json:"body,omitempty"`
	BodyBase64 *string         `json:"body_base64,omitempty"`
	// Attempt counts the deliveries, this one included.
	Attempt int  `json:"attempt"`
	RunAt   Time `json:"run_at"`
	// Headers are the job's headers, as in Job.
	Headers map[string]string `json:"headers,omitempty"`
}
