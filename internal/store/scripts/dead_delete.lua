-- dead_delete.lua: delete dead jobs for good.
-- KEYS: see lib.lua; for 'ids', KEYS[NKEYS + k] is the ended
-- marker of the k-th id (mark_ended): jobs deleted by 'all' leave none, as their ids are not
-- known before the script runs.
-- ARGV[4] 'all' or 'ids'; ARGV[5] limit (for 'all'); ARGV[6..] ids (for 'ids').
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
local marks = ARGV[4] == 'ids' and #KEYS > NKEYS
local n = 0
for k, id in ipairs(ids) do
  if redis.call('ZREM', DEAD, id) == 1 then
    local rec = (ARCHIVE ~= 0 or marks) and redis.call('HGET', JOBS, id)
    if rec and ARCHIVE ~= 0 then archive('dead_deleted', id, rec, attempts_of(rec)) end
    redis.call('HDEL', JOBS, id)
    if marks then mark_ended(KEYS[NKEYS + k], END_DEAD, rec) end
    n = n + 1
  end
end
if n > 0 then record(n) end
return n
