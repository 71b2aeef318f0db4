-- kick_delayed.lua: make the given jobs that are still delayed ready at once (beanstalkd's
-- kick): each leaves the delayed set for its ready set, due now, and waiting consumers are told.
-- KEYS: see lib.lua; KEYS[NKEYS + k] is the record of the call that enqueued the k-th job, if
-- that was a lone one (keep_call). ARGV[4..] job ids.
-- Returns the ids moved; a replay answers the same.
local r = recorded()
if r == '' then return redis.error_reply(ABANDONED) end
if r then return cmsgpack.unpack(r) end
local moved, lanes = {}, {}
for i = 4, #ARGV do
  local id = ARGV[i]
  local due = redis.call('ZSCORE', DELAYED, id)
  local j = due and tonumber(due) > NOW and load_job(id)
  if j then
    redis.call('ZREM', DELAYED, id)
    j[F_DELAY] = NOW - j[F_CREATED]
    keep_call(KEYS[NKEYS + i - 3], save(id, j))
    local lane = lane_of(j)
    local set = READY
    if lane == 'push' then set = READY_PUSH end
    redis.call('ZADD', set, ready_score(j[F_PRIORITY], NOW), id)
    lanes[lane] = true
    moved[#moved + 1] = id
  end
end
for lane in pairs(lanes) do notify_if_sooner(nil, NOW, lane) end
if #moved > 0 then record(moved) end
return moved
