-- A job counts the releases that put it back for later without an attempt (snoozes), and may
-- have a limit on them (max_snoozes, 0 for none). Rows written before this version read 0 for
-- both, which is what their jobs had. A constant default adds the columns without rewriting the
-- table.
ALTER TABLE delayq_job_history ADD COLUMN snoozes int4 NOT NULL DEFAULT 0;
ALTER TABLE delayq_job_history ADD COLUMN max_snoozes int4 NOT NULL DEFAULT 0;
