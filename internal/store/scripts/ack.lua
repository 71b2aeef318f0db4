-- ack.lua: a reserved job is done; remove it.
-- KEYS: see lib.lua. ARGV[1] clock offset; ARGV[2] id; ARGV[3] lease.
-- Returns 1 when acked, 0 when the lease is not the job's current, unexpired one.
local id = ARGV[2]
if not owned(id, ARGV[3]) then return 0 end
redis.call('HDEL', JOBS, id)
redis.call('ZREM', RESERVED, id)
return 1
