-- schedule_look.lua: read a schedule for a scheduler's look, which may enqueue its ticks.
-- KEYS: see schedule_lib.lua (no call record). ARGV[4] the look-ahead of the look, ms.
-- Returns the schedule as state() answers it, or nil when there is none. Unless the schedule
-- is paused, it raises the horizon to now plus the look-ahead first: a delete, or a put that
-- moves the schedule to another topic, then knows which ticks a look still under way may
-- enqueue. A second run reads afresh and raises the horizon again, which only ever grows, so
-- the horizon covers whichever answer the caller got.
if not redis.call('HGET', STATE, 'def') then return false end
raise_horizon(tonumber(ARGV[4]))
return state()
