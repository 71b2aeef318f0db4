-- reserve.lua: lease up to max due jobs, highest priority first, then earliest due time.
-- Before leasing it fails expired leases and promotes due jobs, at most ARGV[5] of each, so one
-- call stays short however large the backlog. The records are returned as stored, unchanged:
-- the lease is kept in the leases hash and the reserved set.
-- KEYS: see lib.lua.
-- ARGV[1] clock offset; ARGV[2] lane: 'pull' or 'push' (jobs with a callback URL);
-- ARGV[3] max; ARGV[4] lease prefix (random, from the caller); ARGV[5] bulk limit;
-- ARGV[6] ttr override in ms (0: each job's own); ARGV[7..] pairs of id, lease to ack first (a
-- worker's finished jobs ride along with its next reserve).
-- Returns: {now, next, acked, job_1, ..., job_k}: next is the partition's next due time or lease
-- deadline in Unix ms (now when due jobs remain, -1 when there is nothing), acked is
-- ack_leases()'s value per pair, each job as reply().
local acked = ack_leases(7)
local limit = tonumber(ARGV[5])
expire_leases(limit)
promote(limit)
local set = READY
if ARGV[2] == 'push' then set = READY_PUSH end
local ids = redis.call('ZRANGE', set, 0, tonumber(ARGV[3]) - 1)
local out = {NOW, -1, acked}
if #ids > 0 then
  bulk('ZREM', set, ids)
  local ttr_override = tonumber(ARGV[6])
  local leases, deadlines = {}, {}
  for _, id in ipairs(ids) do
    local rec = redis.call('HGET', JOBS, id)
    if rec then
      local _, _, _, ttr, attempts = cmsgpack.unpack_limit(rec, 4)
      if ttr_override > 0 then ttr = ttr_override end
      local lease = ARGV[4] .. '.' .. (attempts + 1)
      leases[#leases + 1] = id
      leases[#leases + 1] = lease
      deadlines[#deadlines + 1] = NOW + ttr
      deadlines[#deadlines + 1] = id
      out[#out + 1] = {id, rec, S_RESERVED, lease, NOW + ttr}
    end
  end
  bulk('HSET', LEASES, leases)
  bulk('ZADD', RESERVED, deadlines)
end
local upcoming = -1
if redis.call('ZCARD', set) > 0 then
  upcoming = NOW
else
  local d = head_score()
  local r = redis.call('ZRANGE', RESERVED, 0, 0, 'WITHSCORES')
  if d then upcoming = d end
  if #r > 0 and (upcoming == -1 or tonumber(r[2]) < upcoming) then upcoming = tonumber(r[2]) end
end
out[2] = upcoming
return out
