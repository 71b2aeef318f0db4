-- A dead job that is requeued starts its attempts over, so a job can end twice with the same
-- outcome and attempts (dead at 3, requeued, dead at 3 again), even within one millisecond:
-- the finish time and the Redis stream entry the outcome came from (entry, '' for outcomes
-- from elsewhere) tell those ends apart, and a batch sent again still inserts nothing twice.
ALTER TABLE delayq_job_history ADD COLUMN entry text NOT NULL DEFAULT '';
ALTER TABLE delayq_job_history DROP CONSTRAINT delayq_job_history_once;
ALTER TABLE delayq_job_history ADD CONSTRAINT delayq_job_history_once
	UNIQUE (topic, id, created_at, outcome, attempts, finished_at, entry);
