-- lib_controls.lua: the topic controls' part of the shared prelude, after lib.lua.
-- A topic's controls live in each of its partitions' SETTINGS hash (see lib.lua), so that a
-- reserve reads those of its own partition, in its own slot. A missing hash or field is no
-- control.

-- PAUSED is the next moment a reserve or a look answers for a paused partition: nothing is
-- handed out, whatever is due, until a resume, whose notice wakes the consumers.
local PAUSED = -2

-- CONTROLS_CHANGED is the notice that tells the consumers waiting on a partition to look at it
-- again: its controls changed, and what they learned of it may no longer hold.
local CONTROLS_CHANGED = 'controls'

-- controls returns whether the partition is paused.
local function controls()
  return redis.call('HGET', SETTINGS, 'paused') == '1'
end

-- allowed answers how many of max deliveries the controls let start now.
local function allowed(max, paused)
  if paused then return 0 end
  return max
end

-- next_due answers when a consumer of the lane whose ready set is set should next look at the
-- partition: NOW when due jobs wait, else the earlier of its first delayed job and its first
-- lease deadline (a lease that expires hands its job out again), -1 when there is neither;
-- PAUSED while paused.
local function next_due(set, paused)
  if paused then return PAUSED end
  if redis.call('ZCARD', set) > 0 then return NOW end
  local t = head_score() or -1
  local rs = redis.call('ZRANGE', RESERVED, 0, 0, 'WITHSCORES')
  if #rs > 0 and (t == -1 or tonumber(rs[2]) < t) then t = tonumber(rs[2]) end
  return t
end
