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
	// Paused tells whether the topic is paused (an extension).
	Paused bool `json:"paused"`
	// Limits are the topic's rate and concurrency limits (an extension).
	Limits TopicLimits `json:"limits"`
	// Partitions is how many partitions the topic is split over (an extension).
	Partitions int `json:"partitions"`
	// LeasesExpired counts the topic's leases that reached their deadline unsettled (an
	// extension): each such job was retried or went dead.
	LeasesExpired int64 `json:"leases_expired"`
	// Defaults are what the topic's jobs take when they leave a setting to it (an extension);
	// absent when the topic sets none.
	Defaults *TopicDefaults `json:"defaults,omitempty"`
}

// TopicDefaults are what a topic's jobs take when they leave a setting to it: the body of a
// change of them (PUT /v1/topics/{topic}/defaults, which replaces them all) and part of a
// topic's stats.
type TopicDefaults struct {
	// UniqueForMs is the unique_for_ms of the topic's jobs with an id that give none: absent
	// (null) leaves it to the server's --unique-for, 0 keeps no id taken.
	UniqueForMs *int64 `json:"unique_for_ms"`
}

// TopicLimits are a topic's rate and concurrency limits, 0 for none: the body of a limits
// change, which replaces them all (a field left out is no limit), and part of a topic's stats.
type TopicLimits struct {
	// Rate is how many deliveries may start within any span of PeriodMs.
	Rate int64 `json:"rate"`
	// PeriodMs is the rate limit's window; given with Rate, and only with it.
	PeriodMs int64 `json:"period_ms"`
	// Concurrency is how many of the topic's jobs may be reserved at once.
	Concurrency int64 `json:"concurrency"`
}

// TopicList is the answer to a listing of topics; never null.
type TopicList struct {
	Topics []TopicStats `json:"topics"`
}
