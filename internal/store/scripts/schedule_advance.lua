-- schedule_advance.lua: move a schedule's cursor, and its last tick, past ticks a scheduler
-- has dealt with.
-- KEYS: see schedule_lib.lua (no call record). ARGV[4] the schedule's created (its identity, as
-- the caller read it), ARGV[5] the new cursor, ARGV[6] the new last tick ('' to leave it), Unix ms.
-- Returns 1 when the schedule is the one the caller read, 0 when it was deleted (and perhaps
-- made again) since: then nothing changes. Both values only ever grow, so a late or repeated
-- call changes nothing another has moved further, and a second run answers as the first.
if redis.call('HGET', STATE, 'created') ~= ARGV[4] then return 0 end
if tonumber(ARGV[5]) > tonumber(redis.call('HGET', STATE, 'cursor')) then
  redis.call('HSET', STATE, 'cursor', ARGV[5])
end
if ARGV[6] ~= '' and tonumber(ARGV[6]) > tonumber(redis.call('HGET', STATE, 'last') or 0) then
  redis.call('HSET', STATE, 'last', ARGV[6])
end
return 1
