-- cancel.lua: delete a job in any state; it is never handed out again, and its lease dies with it.
-- KEYS: see lib.lua. ARGV[4] id.
-- Returns 1 when the job existed, 0 when there was none.
-- A second run of a call that deleted the job answers as the first did, and deletes nothing:
-- the id may name a new job by now. So the record is read first.
local id = ARGV[4]
local r = recorded()
if r and r ~= '' then return cmsgpack.unpack(r) end
local rec = ARCHIVE ~= 0 and redis.call('HGET', JOBS, id)
if redis.call('HDEL', JOBS, id) == 0 then return 0 end
redis.call('ZREM', DELAYED, id)
redis.call('ZREM', READY, id)
redis.call('ZREM', READY_PUSH, id)
redis.call('ZREM', RESERVED, id)
local leased = redis.call('HDEL', LEASES, id)
if rec then archive('cancelled', id, rec, attempts_of(rec) + leased) end
redis.call('ZREM', DEAD, id)
announce_free(leased)
record(1)
return 1
