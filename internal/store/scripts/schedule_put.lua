-- schedule_put.lua: create a schedule, or replace the definition of one.
-- KEYS: see schedule_lib.lua. ARGV[4] the definition, ARGV[5] its topic, ARGV[6] the look-ahead
-- of the look the caller makes with the answer, ms.
-- Returns {status, state...}: status 1 when the schedule was created, 2 when it was replaced,
-- then the schedule as state() answers it. A new schedule's cursor is now: its first tick is
-- the first after it was made. Over a tombstone it is the deleted schedule's floor when that is
-- later, and its identity is later than the deleted one's: the ticks the deleted schedule dealt
-- with or may still enqueue, in whatever topic, stay its own. A replaced one keeps its pause
-- and identity, and its cursor unless that is before now: the new definition takes over from
-- the ticks not yet enqueued after now, and its ticks before the replace are not missed ones.
-- A replace that changes the topic moves the cursor to the horizon too: the looks under way
-- enqueue their ticks in the old topic, whose partitions' marks the new one's do not see.
-- Then the horizon is raised for the caller's look. A second run of the call answers what the
-- first did.
local again = recorded()
if again then return again end
local status = 2
local v = redis.call('HMGET', STATE, 'def', 'created', 'cursor', 'topic', 'horizon', 'floor')
if not v[1] then
  status = 1
  local created = math.max(NOW, tonumber(v[2] or 0) + 1)
  local cursor = math.max(NOW, tonumber(v[6] or 0))
  redis.call('DEL', STATE)
  redis.call('HSET', STATE, 'created', created, 'cursor', cursor, 'paused', '0')
  if cursor > NOW then redis.call('HSET', STATE, 'floor', cursor) end
else
  local floor = NOW
  if v[4] ~= ARGV[5] then floor = math.max(NOW, tonumber(v[5] or 0)) end
  if tonumber(v[3]) < floor then redis.call('HSET', STATE, 'cursor', floor) end
end
redis.call('HSET', STATE, 'def', ARGV[4], 'topic', ARGV[5], 'updated', NOW)
raise_horizon(tonumber(ARGV[6]))
local out = state()
table.insert(out, 1, status)
record(out)
return out
