package apiv1

// TopicStats are a topic's job counts by state.
type TopicStats struct {
	Name     string `json:"name"`
	Delayed  int64  `json:"delayed"`
	Ready    int64  `json:"ready"`
	Reserved int64  `json:"reserved"`
	Dead     int64  `json:"dead"`
	// NextRunAt is the earliest due time of a pending job; null when none is pending.
	NextRunAt *Time `json:"next_run_at"`
	// OldestReadyMs is how long the oldest ready job has waited; 0 when none waits.
	OldestReadyMs int64 `json:"oldest_ready_ms"`
}

// TopicList is the answer to a listing of topics; never null.
type TopicList struct {
	Topics []TopicStats `json:"topics"`
}
