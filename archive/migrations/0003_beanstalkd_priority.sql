-- A job put, released or buried over the beanstalkd protocol has a priority of beanstalkd's,
-- 0 to 2^32-1, which delayq stores as 2^40 plus that number: too large for priority, and
-- meaningless to a reader. Such a row keeps priority 0, as the API shows such a job, and the
-- beanstalkd priority here (bigint: PostgreSQL has no unsigned 32-bit integer); other rows have
-- NULL. No row before this version has one: those ends were refused.
ALTER TABLE delayq_job_history ADD COLUMN beanstalkd_priority bigint;
-- NOT VALID spares a scan of a large table under its lock; every row so far is NULL, and the
-- check holds for every row written from now on.
ALTER TABLE delayq_job_history ADD CONSTRAINT delayq_job_history_beanstalkd_priority
	CHECK (beanstalkd_priority BETWEEN 0 AND 4294967295) NOT VALID;
