-- dead_delete.lua: delete dead jobs for good.
-- KEYS: see lib.lua. ARGV[1] clock offset; ARGV[2] 'all' or 'ids'; ARGV[3] limit (for 'all');
-- ARGV[4..] ids (for 'ids').
-- Returns the number deleted.
local ids
if ARGV[2] == 'all' then
  ids = redis.call('ZRANGE', DEAD, 0, tonumber(ARGV[3]) - 1)
else
  ids = {unpack(ARGV, 4)}
end
local n = 0
for _, id in ipairs(ids) do
  if redis.call('ZREM', DEAD, id) == 1 then
    redis.call('HDEL', JOBS, id)
    n = n + 1
  end
end
return n
