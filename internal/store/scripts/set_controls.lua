-- set_controls.lua: change a partition's share of its topic's controls.
-- KEYS: see lib.lua.
-- ARGV[4] 'pause', 'resume', 'limits' or 'unique'. For 'limits', the values of the settings
-- fields rate, rate_share, period_ms, concurrency and concurrency_share in ARGV[5..9], '' for
-- none; for 'unique', the topic's default unique_for in ms (enqueue.lua) in ARGV[5], '' for
-- none.
-- Returns 1. A resume or new limits tell the waiting consumers (CONTROLS_CHANGED), which look
-- again at once; a pause tells nobody: a consumer learns it from its next look. A second run of
-- the same call changes nothing: a pause whose answer was lost must not undo a resume made
-- since.
local r = recorded()
if r and r ~= '' then return cmsgpack.unpack(r) end
if ARGV[4] == 'pause' then
  redis.call('HSET', SETTINGS, 'paused', '1')
elseif ARGV[4] == 'unique' then
  if ARGV[5] == '' then
    redis.call('HDEL', SETTINGS, 'unique_for_ms')
  else
    redis.call('HSET', SETTINGS, 'unique_for_ms', ARGV[5])
  end
elseif ARGV[4] == 'resume' then
  redis.call('HDEL', SETTINGS, 'paused')
  redis.call('SPUBLISH', NOTIFY, CONTROLS_CHANGED)
else
  local fields = {'rate', 'rate_share', 'period_ms', 'concurrency', 'concurrency_share'}
  local set, unset = {}, {}
  for i, f in ipairs(fields) do
    local v = ARGV[4 + i]
    if v == '' then
      unset[#unset + 1] = f
    else
      set[#set + 1] = f
      set[#set + 1] = v
    end
  end
  -- The starts of a window stay when only its numbers change: a new limit counts the
  -- deliveries started within its period, so changing it lets no burst through.
  if ARGV[5] == '' then redis.call('DEL', STARTS) end
  if #unset > 0 then redis.call('HDEL', SETTINGS, unpack(unset)) end
  if #set > 0 then redis.call('HSET', SETTINGS, unpack(set)) end
  redis.call('SPUBLISH', NOTIFY, CONTROLS_CHANGED)
end
record(1)
return 1
