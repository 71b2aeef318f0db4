-- stats.lua: count a partition's jobs by state.
-- KEYS: see lib.lua.
-- Returns {now, delayed, ready, reserved, dead, earliest pending due time or -1,
--          earliest due time among ready jobs or -1, 1 when paused else 0,
--          the topic's rate limit, its period in ms and the topic's concurrency limit (0: none),
--          the leases expired in the partition so far}.
local due_waiting = redis.call('ZCOUNT', DELAYED, '-inf', NOW)
local delayed = redis.call('ZCARD', DELAYED) - due_waiting
local ready = due_waiting + redis.call('ZCARD', READY) + redis.call('ZCARD', READY_PUSH)

-- oldest_ready finds the earliest due time in a ready set: its scores group by priority, and the
-- head of each group is that group's oldest, so it visits one member per priority present.
local function oldest_ready(set)
  local best = -1
  local from = '-inf'
  while true do
    local h = redis.call('ZRANGE', set, from, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
    if #h == 0 then return best end
    local s = tonumber(h[2])
    local group = math.floor(s / PRIORITY_UNIT)
    local t = s - group * PRIORITY_UNIT
    local next_from = (group + 1) * PRIORITY_UNIT
    if group == 0 and t < RANK_SPAN then
      -- Jobs ranked by a beanstalkd priority (lib.lua), whose scores are not due times: the
      -- due time of the first of them stands for all.
      local _, _, _, _, _, created, delay = cmsgpack.unpack_limit(redis.call('HGET', JOBS, h[1]), 6)
      t = created + delay
      next_from = RANK_SPAN
    end
    if best == -1 or t < best then best = t end
    from = string.format('%.0f', next_from)
  end
end

local oldest = -1
for _, t in ipairs({oldest_ready(READY), oldest_ready(READY_PUSH)}) do
  if t ~= -1 and (oldest == -1 or t < oldest) then oldest = t end
end
local head = head_score()
if due_waiting > 0 and (oldest == -1 or head < oldest) then oldest = head end
local earliest = oldest
if head and (earliest == -1 or head < earliest) then earliest = head end
local s = redis.call('HMGET', SETTINGS, 'paused', 'rate', 'period_ms', 'concurrency', 'leases_expired')
local paused = 0
if s[1] == '1' then paused = 1 end
return {NOW, delayed, ready, redis.call('ZCARD', RESERVED), redis.call('ZCARD', DEAD), earliest, oldest,
        paused, tonumber(s[2]) or 0, tonumber(s[3]) or 0, tonumber(s[4]) or 0, tonumber(s[5]) or 0}
