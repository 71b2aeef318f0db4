-- schedule_get.lua: read a schedule.
-- KEYS: see schedule_lib.lua (no call record).
-- Returns the schedule as state() answers it, or nil when there is none.
return state() or false
