-- get.lua: read one job.
-- KEYS: see lib.lua. ARGV[1] clock offset; ARGV[2] id.
-- Returns the job as reply(), or nil when there is none.
local rec = redis.call('HGET', JOBS, ARGV[2])
if not rec then return false end
return reply(ARGV[2], rec)
