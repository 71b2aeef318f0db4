-- dead_requeue.lua: put dead jobs back, due at once, with their attempts reset.
-- KEYS: see lib.lua. ARGV[1] clock offset; ARGV[2] 'all' or 'ids'; ARGV[3] limit (for 'all');
-- ARGV[4..] ids (for 'ids').
-- Returns the number requeued.
local ids
if ARGV[2] == 'all' then
  ids = redis.call('ZRANGE', DEAD, 0, tonumber(ARGV[3]) - 1)
else
  ids = {unpack(ARGV, 4)}
end
local prev = head_score()
local n = 0
for _, id in ipairs(ids) do
  local j = load_job(id)
  if j and redis.call('ZREM', DEAD, id) == 1 then
    j[F_ATTEMPTS] = 0
    j[F_DIED_AT] = nil
    schedule(id, j, NOW)
    save(id, j)
    n = n + 1
  end
end
if n > 0 then notify_if_sooner(prev, NOW) end
return n
