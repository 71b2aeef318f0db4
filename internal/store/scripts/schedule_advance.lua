-- schedule_advance.lua: move a schedule's cursor, and its last tick, past ticks a scheduler
-- has dealt with, and count the ticks it found with their job id taken.
-- KEYS: see schedule_lib.lua. ARGV[4] the schedule's created (its identity, as the caller read
-- it), ARGV[5] the new cursor, ARGV[6] the new last tick ('' to leave it), Unix ms; ARGV[7]
-- how many ticks the look found with their job id taken by another job (tick.lua's outcome 2).
-- Returns {ok, skipped}: ok 1 when the schedule is the one the caller read, and skipped the
-- count before this call; {0, 0} when it was deleted (and perhaps made again) since: then
-- nothing changes. The cursor and the last tick only ever grow, so a late call changes nothing
-- another has moved further. A second run of the call answers what the first did and counts
-- nothing again.
local again = recorded()
if again then return again end
if redis.call('HGET', STATE, 'created') ~= ARGV[4] or not redis.call('HGET', STATE, 'def') then
  return {0, 0}
end
if tonumber(ARGV[5]) > tonumber(redis.call('HGET', STATE, 'cursor')) then
  redis.call('HSET', STATE, 'cursor', ARGV[5])
end
if ARGV[6] ~= '' and tonumber(ARGV[6]) > tonumber(redis.call('HGET', STATE, 'last') or 0) then
  redis.call('HSET', STATE, 'last', ARGV[6])
end
local skipped = tonumber(redis.call('HGET', STATE, 'skipped') or 0)
if tonumber(ARGV[7]) > 0 then
  redis.call('HINCRBY', STATE, 'skipped', ARGV[7])
end
local out = {1, skipped}
record(out)
return out
