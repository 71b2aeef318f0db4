-- The history of jobs: one row per outcome (see package archive).
CREATE TABLE delayq_job_history (
	-- seq orders rows that finished at the same instant, for stable pages.
	seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	topic        text        NOT NULL,
	id           text        NOT NULL,
	outcome      text        NOT NULL
		CHECK (outcome IN ('acked', 'dead', 'cancelled', 'dead_deleted', 'failed')),
	attempts     integer     NOT NULL,
	-- NULL when bodies are not kept.
	body         bytea,
	format       integer     NOT NULL,
	priority     integer     NOT NULL,
	max_retries  integer     NOT NULL,
	ttr_ms       bigint      NOT NULL,
	created_at   timestamptz NOT NULL,
	run_at       timestamptz NOT NULL,
	finished_at  timestamptz NOT NULL,
	last_error   text        NOT NULL,
	callback_url text        NOT NULL,
	-- NULL when the job had no headers; else a JSON object of strings.
	headers      jsonb,
	-- A batch sent again inserts nothing twice. Also serves lookups by (topic, id).
	CONSTRAINT delayq_job_history_once UNIQUE (topic, id, created_at, outcome, attempts)
);

-- Newest first, overall and by topic or outcome; retention deletes by finished_at.
CREATE INDEX delayq_job_history_finished ON delayq_job_history (finished_at, seq);
CREATE INDEX delayq_job_history_topic_finished ON delayq_job_history (topic, finished_at, seq);
CREATE INDEX delayq_job_history_outcome_finished ON delayq_job_history (outcome, finished_at, seq);
