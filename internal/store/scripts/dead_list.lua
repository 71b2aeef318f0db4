-- dead_list.lua: page through a partition's dead letters in id order.
-- KEYS: see lib.lua. ARGV[4] the last id of the previous page ('' to start); ARGV[5] page size.
-- Returns the jobs as reply().
local from = '-'
if ARGV[4] ~= '' then from = '(' .. ARGV[4] end
local ids = redis.call('ZRANGE', DEAD, from, '+', 'BYLEX', 'LIMIT', 0, tonumber(ARGV[5]))
local out = {}
for _, id in ipairs(ids) do
  local rec = redis.call('HGET', JOBS, id)
  if rec then out[#out + 1] = {id, rec, S_DEAD, false, false} end
end
return out
