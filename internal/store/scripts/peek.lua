-- peek.lua: the ready scores of a lane's first jobs, after the housekeeping a reserve does first
-- (failing expired leases, promoting due jobs), so that a reserve over several partitions can
-- take the best jobs of all of them. It records nothing: what it changes is what any later
-- call would change first, so running it twice is running it once.
-- KEYS: see lib.lua.
-- ARGV[4] lane: 'pull' or 'push'; ARGV[5] how many scores; ARGV[6] bulk limit.
-- Returns {now, next, score_1, id_1, ..., score_k, id_k}: next as reserve.lua's, the scores
-- (ready_score(priority, due time), lowest first) as strings and the ids of no more jobs than
-- the topic's controls would let a reserve take: jobs of equal score rank by id, across
-- partitions as within one.
local limit = tonumber(ARGV[6])
expire_leases(limit)
promote(limit)
local set = READY
if ARGV[4] == 'push' then set = READY_PUSH end
local paused, rate, period, concurrency = controls()
local max = allowed(tonumber(ARGV[5]), paused, rate, period, concurrency)
local heads = {}
if max > 0 then heads = redis.call('ZRANGE', set, 0, max - 1, 'WITHSCORES') end
local out = {NOW, next_due(set, paused, rate, period, concurrency)}
for i = 1, #heads, 2 do
  out[#out + 1] = heads[i + 1]
  out[#out + 1] = heads[i]
end
return out
