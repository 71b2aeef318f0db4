-- stats.lua: count a partition's jobs by state.
-- KEYS: see lib.lua. ARGV[1] clock offset.
-- Returns {now, delayed, ready, reserved, dead, earliest pending due time or -1,
--          earliest due time among ready jobs or -1}.
local due_waiting = redis.call('ZCOUNT', K.delayed, '-inf', NOW)
local delayed = redis.call('ZCARD', K.delayed) - due_waiting
local ready = due_waiting + redis.call('ZCARD', K.ready) + redis.call('ZCARD', K.ready_push)

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
    if best == -1 or t < best then best = t end
    from = string.format('%.0f', (group + 1) * PRIORITY_UNIT)
  end
end

local oldest = -1
for _, t in ipairs({oldest_ready(K.ready), oldest_ready(K.ready_push)}) do
  if t ~= -1 and (oldest == -1 or t < oldest) then oldest = t end
end
local head = head_score()
if due_waiting > 0 and (oldest == -1 or head < oldest) then oldest = head end
local earliest = oldest
if head and (earliest == -1 or head < earliest) then earliest = head end
return {NOW, delayed, ready, redis.call('ZCARD', K.reserved), redis.call('ZCARD', K.dead), earliest, oldest}
