-- dead_delete.lua: delete dead jobs for good.
-- KEYS: see lib.lua. ARGV[4] 'all' or 'ids'; ARGV[5] limit (for 'all'); ARGV[6..] ids (for 'ids').
-- Returns the number deleted.
local r = recorded()
if r == '' then return redis.error_reply(ABANDONED) end
if r then return cmsgpack.unpack(r) end
local ids
if ARGV[4] == 'all' then
  ids = redis.call('ZRANGE', DEAD, 0, tonumber(ARGV[5]) - 1)
else
  ids = {unpack(ARGV, 6)}
end
local n = 0
for _, id in ipairs(ids) do
  if redis.call('ZREM', DEAD, id) == 1 then
    local rec = ARCHIVE ~= 0 and redis.call('HGET', JOBS, id)
    if rec then archive('dead_deleted', id, rec, attempts_of(rec)) end
    redis.call('HDEL', JOBS, id)
    n = n + 1
  end
end
if n > 0 then record(n) end
return n
