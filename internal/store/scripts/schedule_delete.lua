-- schedule_delete.lua: delete a schedule. The jobs of ticks enqueued already stay.
-- KEYS: see schedule_lib.lua.
-- Returns 1 when the schedule existed, 0 when there was none. A second run of a call that
-- deleted it answers 1 and deletes nothing: the name may hold a new schedule by now.
local again = recorded()
if again then return again[1] end
if redis.call('DEL', STATE) == 0 then return 0 end
record({1})
return 1
