-- schedule_delete.lua: delete a schedule. The jobs of ticks enqueued already stay.
-- KEYS: see schedule_lib.lua.
-- Returns 1 when the schedule existed, 0 when there was none. A second run of a call that
-- deleted it answers 1 and deletes nothing: the name may hold a new schedule by now.
-- What is left is a tombstone (see schedule_lib.lua) while a look that read the schedule
-- before the delete may still enqueue a tick: floor, the latest of its cursor, its last tick
-- and its horizon, and created. It expires once the clock has passed floor.
local again = recorded()
if again then return again[1] end
local v = redis.call('HMGET', STATE, 'def', 'created', 'cursor', 'last', 'horizon')
if not v[1] then return 0 end
local floor = math.max(tonumber(v[3]), tonumber(v[4] or 0), tonumber(v[5] or 0))
redis.call('DEL', STATE)
if floor >= NOW then
  redis.call('HSET', STATE, 'floor', floor, 'created', v[2])
  redis.call('PEXPIRE', STATE, floor - NOW + 1)
end
record({1})
return 1
