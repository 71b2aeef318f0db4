-- stats.lua: count a partition's jobs by state.
-- KEYS: see lib.lua.
-- Returns {now, delayed, ready, reserved, dead, earliest pending due time or -1,
--          when the oldest ready job became ready (its due time, or its enqueue when that was
--          later) or -1, 1 when paused else 0,
--          the topic's rate limit, its period in ms and the topic's concurrency limit (0: none),
--          the leases expired in the partition so far, the topic's default unique_for in ms or
--          -1 when it sets none}.
local due_waiting = redis.call('ZCOUNT', DELAYED, '-inf', NOW)
local delayed = redis.call('ZCARD', DELAYED) - due_waiting
local ready = due_waiting + redis.call('ZCARD', READY) + redis.call('ZCARD', READY_PUSH)

-- A job became ready at its due time, or at its enqueue when it was enqueued with a due time
-- already past ("run_at" in the past): it waits for a consumer from then on.

-- ready_since returns when job id became ready, given its due time (nil: read from its record).
local function ready_since(id, due)
  local rec = redis.call('HGET', JOBS, id)
  if not rec then return due or NOW end
  local _, _, _, _, _, created, delay = cmsgpack.unpack_limit(rec, 6)
  return math.max(due or (created + delay), created)
end

-- PAST_WALK bounds how many jobs with a past due time oldest_in reads behind a group's head: a
-- backlog enqueued with past due times makes a long run of them, and this script runs on every
-- dashboard and metrics refresh.
local PAST_WALK = 64

-- oldest_in returns when the job of set that became ready first in one group of due-time-ordered
-- scores became ready: id and s are the group's head and its score, base the score of due time 0.
-- No job became ready before its due time, so jobs due at or after the best time found cannot
-- beat it: when the head was not enqueued late, nothing else is read.
local function oldest_in(set, id, s, base)
  local due = s - base
  local best = ready_since(id, due)
  if best == due then return best end
  local rest = redis.call('ZRANGE', set, string.format('%.0f', s), '(' .. string.format('%.0f', base + best),
    'BYSCORE', 'LIMIT', 1, PAST_WALK, 'WITHSCORES')
  for i = 1, #rest, 2 do
    due = tonumber(rest[i + 1]) - base
    if due >= best then break end
    best = math.min(best, ready_since(rest[i], due))
  end
  return best
end

-- oldest_ready finds when the oldest job of a ready set became ready: its scores group by
-- priority, each group in due-time order, so it visits the head of each priority present.
local function oldest_ready(set)
  local best = -1
  local from = '-inf'
  while true do
    local h = redis.call('ZRANGE', set, from, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
    if #h == 0 then return best end
    local s = tonumber(h[2])
    local group = math.floor(s / PRIORITY_UNIT)
    local base = group * PRIORITY_UNIT
    local next_from = base + PRIORITY_UNIT
    local t
    if group == 0 and s < RANK_SPAN then
      -- Jobs ranked by a beanstalkd priority (lib.lua), whose scores are not due times: the
      -- first of them stands for all.
      t = ready_since(h[1], nil)
      next_from = RANK_SPAN
    else
      t = oldest_in(set, h[1], s, base)
    end
    if best == -1 or t < best then best = t end
    from = string.format('%.0f', next_from)
  end
end

local oldest = -1
for _, t in ipairs({oldest_ready(READY), oldest_ready(READY_PUSH)}) do
  if t ~= -1 and (oldest == -1 or t < oldest) then oldest = t end
end
local h = redis.call('ZRANGE', DELAYED, '0', '0', 'WITHSCORES')
local head = h[2] and tonumber(h[2])
if due_waiting > 0 then
  -- Due jobs not yet moved to a ready set: the delayed set is in due-time order too.
  local t = oldest_in(DELAYED, h[1], head, 0)
  if oldest == -1 or t < oldest then oldest = t end
end
local earliest = oldest
if head and (earliest == -1 or head < earliest) then earliest = head end
local s = redis.call('HMGET', SETTINGS, 'paused', 'rate', 'period_ms', 'concurrency', 'leases_expired', 'unique_for_ms')
local paused = 0
if s[1] == '1' then paused = 1 end
return {NOW, delayed, ready, redis.call('ZCARD', RESERVED), redis.call('ZCARD', DEAD), earliest, oldest,
        paused, tonumber(s[2]) or 0, tonumber(s[3]) or 0, tonumber(s[4]) or 0, tonumber(s[5]) or 0,
        tonumber(s[6]) or -1}
