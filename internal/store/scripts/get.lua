-- get.lua: read one job.
-- KEYS: see lib.lua; KEYS[NKEYS + 1], when given, is the job's ended marker (mark_ended). ARGV[4] id.
-- Returns the job as reply(); {outcome, at} when there is none but its id is taken by a job
-- that ended within its unique_for (END_ACKED, END_CANCELLED or END_DEAD, and when); else nil.
local rec = redis.call('HGET', JOBS, ARGV[4])
if rec then return reply(ARGV[4], rec) end
local outcome, at, _, _, taken = ended_by(KEYS[NKEYS + 1])
if taken then return {outcome, at} end
return false
