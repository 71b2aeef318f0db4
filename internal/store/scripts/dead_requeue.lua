-- dead_requeue.lua: put dead jobs back, due at once, with their attempts and snoozes reset.
-- KEYS: see lib.lua. ARGV[4] 'all' or 'ids'; ARGV[5] limit (for 'all'); ARGV[6..] ids (for 'ids').
-- Returns the number requeued.
local r = recorded()
if r == '' then return redis.error_reply(ABANDONED) end
if r then return cmsgpack.unpack(r) end
local ids
if ARGV[4] == 'all' then
  ids = redis.call('ZRANGE', DEAD, 0, tonumber(ARGV[5]) - 1)
else
  ids = {unpack(ARGV, 6)}
end
local prev = head_score()
local n = 0
local lanes = {}
for _, id in ipairs(ids) do
  local j = load_job(id)
  if j and redis.call('ZREM', DEAD, id) == 1 then
    j[F_ATTEMPTS] = 0
    j[F_DIED_AT] = nil
    j[F_SNOOZES] = nil
    schedule(id, j, NOW)
    save(id, j)
    lanes[lane_of(j)] = true
    n = n + 1
  end
end
for lane in pairs(lanes) do notify_if_sooner(prev, NOW, lane) end
if n > 0 then record(n) end
return n
