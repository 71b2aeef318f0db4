-- cancel.lua: delete a job in any state; it is never handed out again, and its lease dies with it.
-- KEYS: see lib.lua. ARGV[1] clock offset; ARGV[2] id.
-- Returns 1 when the job existed, 0 when there was none.
local id = ARGV[2]
if redis.call('HDEL', K.jobs, id) == 0 then return 0 end
redis.call('ZREM', K.delayed, id)
redis.call('ZREM', K.ready, id)
redis.call('ZREM', K.ready_push, id)
redis.call('ZREM', K.reserved, id)
redis.call('ZREM', K.dead, id)
return 1
