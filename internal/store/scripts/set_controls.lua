-- set_controls.lua: change a partition's share of its topic's controls.
-- KEYS: see lib.lua.
-- ARGV[3] 'pause' or 'resume'.
-- Returns 1. A resume tells the waiting consumers (CONTROLS_CHANGED), which look again at once;
-- a pause tells nobody: a consumer learns it from its next look. A second run of the same call
-- changes nothing: a pause whose answer was lost must not undo a resume made since.
local r = recorded()
if r and r ~= '' then return cmsgpack.unpack(r) end
if ARGV[3] == 'pause' then
  redis.call('HSET', SETTINGS, 'paused', '1')
else
  redis.call('HDEL', SETTINGS, 'paused')
  redis.call('SPUBLISH', NOTIFY, CONTROLS_CHANGED)
end
record(1)
return 1
