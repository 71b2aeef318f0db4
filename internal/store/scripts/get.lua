-- get.lua: read one job.
-- KEYS: see lib.lua. ARGV[4] id.
-- Returns the job as reply(), or nil when there is none.
local rec = redis.call('HGET', JOBS, ARGV[4])
if not rec then return false end
return reply(ARGV[4], rec)
