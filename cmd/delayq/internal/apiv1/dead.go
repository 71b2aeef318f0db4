package apiv1

// DeadPage is one page of a topic's dead letters.
type DeadPage struct {
	Jobs []*Job `json:"jobs"`
	// NextCursor fetches the next page; empty, and left out, on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// DeadSelection is the body of a dead-letter requeue or delete: IDs or All, not both.
type DeadSelection struct {
	IDs []string `json:"ids,omitzero"`
	// All, when true, selects every dead job of the topic.
	All *bool `json:"all,omitempty"`
}

// RequeueResponse is the answer to a dead-letter requeue.
type RequeueResponse struct {
	Requeued int `json:"requeued"`
}

// DeleteResponse is the answer to a dead-letter delete, and to a topic's (the jobs it purged).
type DeleteResponse struct {
	Deleted int `json:"deleted"`
}
