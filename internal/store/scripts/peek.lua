-- peek.lua: the ready scores of a lane's first jobs, after the housekeeping a reserve does first
-- (failing expired leases, promoting due jobs), so that a reserve over several partitions can
-- take the best jobs of all of them. It records nothing: what it changes is what any later
-- call would change first, so running it twice is running it once.
-- KEYS: see lib.lua.
-- ARGV[3] lane: 'pull' or 'push'; ARGV[4] how many scores; ARGV[5] bulk limit.
-- Returns {now, next, score_1, ..., score_k}: next as reserve.lua's, the scores
-- (ready_score(priority, due time), lowest first) as strings.
local limit = tonumber(ARGV[5])
expire_leases(limit)
promote(limit)
local set = READY
if ARGV[3] == 'push' then set = READY_PUSH end
local heads = redis.call('ZRANGE', set, 0, tonumber(ARGV[4]) - 1, 'WITHSCORES')
local upcoming = -1
if #heads > 0 then
  upcoming = NOW
else
  local d = head_score()
  local rs = redis.call('ZRANGE', RESERVED, 0, 0, 'WITHSCORES')
  if d then upcoming = d end
  if #rs > 0 and (upcoming == -1 or tonumber(rs[2]) < upcoming) then upcoming = tonumber(rs[2]) end
end
local out = {NOW, upcoming}
for i = 2, #heads, 2 do out[#out + 1] = heads[i] end
return out
