-- cancel.lua: delete a job in any state; it is never handed out again, and its lease dies with it.
-- KEYS: see lib.lua. ARGV[1] clock offset; ARGV[2] id.
-- Returns 1 when the job existed, 0 when there was none.
local id = ARGV[2]
if redis.call('HDEL', JOBS, id) == 0 then return 0 end
redis.call('ZREM', DELAYED, id)
redis.call('ZREM', READY, id)
redis.call('ZREM', READY_PUSH, id)
redis.call('ZREM', RESERVED, id)
redis.call('HDEL', LEASES, id)
redis.call('ZREM', DEAD, id)
return 1
