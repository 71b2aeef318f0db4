-- schedule_put.lua: create a schedule, or replace the definition of one.
-- KEYS: see schedule_lib.lua. ARGV[4] the definition.
-- Returns {status, state...}: status 1 when the schedule was created, 2 when it was replaced,
-- then the schedule as state() answers it. A new schedule's cursor is now: its first tick is
-- the first after it was made. A replaced one keeps its pause and identity, and its cursor
-- unless that is before now: the new definition takes over from the ticks not yet enqueued
-- after now, and its ticks before the replace are not missed ones.
-- A second run of the call answers what the first did.
local again = recorded()
if again then return again end
local status = 2
if redis.call('HEXISTS', STATE, 'def') == 0 then
  status = 1
  redis.call('HSET', STATE, 'created', NOW, 'cursor', NOW, 'paused', '0')
elseif tonumber(redis.call('HGET', STATE, 'cursor')) < NOW then
  redis.call('HSET', STATE, 'cursor', NOW)
end
redis.call('HSET', STATE, 'def', ARGV[4], 'updated', NOW)
local out = state()
table.insert(out, 1, status)
record(out)
return out
