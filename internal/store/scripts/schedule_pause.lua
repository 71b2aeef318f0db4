-- schedule_pause.lua: pause or resume a schedule.
-- KEYS: see schedule_lib.lua. ARGV[4] '1' to pause, '0' to resume; ARGV[5] the look-ahead of
-- the look the caller makes with the answer of a resume, ms.
-- Returns the schedule as state() answers it, or nil when there is none. Resuming a paused
-- schedule moves its cursor to now: the ticks of the pause are passed over, not missed, so the
-- missed policy does not bring one back. Pausing a paused schedule, or resuming a running one,
-- changes nothing but the horizon, which a resume raises for the caller's look. A second run of
-- the call answers what the first did.
local again = recorded()
if again then return again end
local paused = redis.call('HGET', STATE, 'paused')
if not paused then return false end
if paused ~= ARGV[4] then
  redis.call('HSET', STATE, 'paused', ARGV[4])
  if ARGV[4] == '0' and tonumber(redis.call('HGET', STATE, 'cursor')) < NOW then
    redis.call('HSET', STATE, 'cursor', NOW)
  end
end
if ARGV[4] == '0' then raise_horizon(tonumber(ARGV[5])) end
local out = state()
record(out)
return out
