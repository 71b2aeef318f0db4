-- reserve.lua: lease up to max due jobs, highest priority first, then earliest due time.
-- Before leasing it fails expired leases and promotes due jobs, at most ARGV[8] of each, so one
-- call stays short however large the backlog. The records are returned as stored, unchanged:
-- the lease is kept in the leases hash and the reserved set.
-- KEYS: see lib.lua.
-- ARGV[4] lane: 'pull' or 'push' (jobs with a callback URL); ARGV[5] max jobs; ARGV[6] max bytes
-- of records (0: no bound; the first job is taken whatever its size); ARGV[7] lease secret
-- (random, from the caller: each job's token is lease_token(secret, id)); ARGV[8] bulk limit;
-- ARGV[9] ttr override in ms (0: each job's own); ARGV[10..] pairs of id, lease to ack first (a
-- worker's finished jobs ride along with its next reserve). KEYS[NKEYS + m] is the ended marker
-- (mark_ended) of the job of the m-th ack pair whose lease is marked (held).
-- Returns: {now, next, acked, job_1, ..., job_k}: next is next_due()'s (now when due jobs
-- remain, the partition's next due time or lease deadline, -1 when there is nothing, PAUSED
-- while the topic is paused), acked is ack_leases()'s value per pair, each job as reply().
-- A paused partition hands out nothing, and one at its rate or concurrency limit no more than
-- the limit lets start (next is then when it lets the next one start); the acks, expired
-- leases and promotions are done all the same. Each delivery started counts in the rate
-- window under its lease token; a replay counts nothing again.
-- A call that leased or acked anything records {now, next, acked, ids}; a replay answers with
-- those of its jobs whose lease is still the one this call gave them, and the server's clock as
-- it is now (the caller learns the clock from it; when a job was leased is its lease deadline
-- less its TTR).
local SECRET = ARGV[7]

local function leased(out, ids)
  for _, id in ipairs(ids) do
    local token = lease_token(SECRET, id)
    local h = redis.call('HGET', LEASES, id)
    if h == token or h == token .. '+' then
      local rec = redis.call('HGET', JOBS, id)
      if rec then
        out[#out + 1] = {id, rec, S_RESERVED, h, tonumber(redis.call('ZSCORE', RESERVED, id))}
      end
    end
  end
  return out
end

local r = recorded()
if r == '' then return redis.error_reply(ABANDONED) end
if r then
  local rec = {cmsgpack.unpack(r)}
  return leased({NOW, rec[2], rec[3]}, rec[4])
end

local ended
if #KEYS > NKEYS then ended = NKEYS + 1 end
local acked = ack_leases(10, ended)
local limit = tonumber(ARGV[8])
expire_leases(limit)
promote(limit)
local set = READY
if ARGV[4] == 'push' then set = READY_PUSH end
local paused, rate, period, concurrency = controls()
local max = allowed(tonumber(ARGV[5]), paused, rate, period, concurrency)
local ids = {}
if max > 0 then ids = redis.call('ZRANGE', set, '0', string.format('%d', max - 1)) end
local out = {NOW, -1, acked}
local taken = {}
if #ids > 0 then
  local budget = tonumber(ARGV[6])
  local ttr_override = tonumber(ARGV[9])
  local leases, deadlines, gone = {}, {}, {}
  local bytes = 0
  local earliest
  local rhead = lease_head()
  for _, id in ipairs(ids) do
    local rec = redis.call('HGET', JOBS, id)
    if rec then
      bytes = bytes + #rec
      if budget > 0 and bytes > budget and #taken > 0 then break end
      local _, _, _, ttr = cmsgpack.unpack_limit(rec, 3)
      if ttr_override > 0 then ttr = ttr_override end
      local lease = held(lease_token(SECRET, id), rec)
      taken[#taken + 1] = id
      leases[#leases + 1] = id
      leases[#leases + 1] = lease
      deadlines[#deadlines + 1] = string.format('%d', NOW + ttr)
      deadlines[#deadlines + 1] = id
      if earliest == nil or NOW + ttr < earliest then earliest = NOW + ttr end
      out[#out + 1] = {id, rec, S_RESERVED, lease, NOW + ttr}
    else
      gone[#gone + 1] = id
    end
  end
  bulk('ZREM', set, gone)
  bulk('ZREM', set, taken)
  bulk('HSET', LEASES, leases)
  bulk('ZADD', RESERVED, deadlines)
  count_starts(rate, leases)
  -- A lease that ends before any other is announced: should its holder never settle it, it
  -- must be expired at its deadline, whoever consumes the topic then.
  if earliest then announce_lease(rhead, earliest) end
end
local upcoming = next_due(set, paused, rate, period, concurrency)
out[2] = upcoming
if #taken > 0 or #acked > 0 then record(NOW, upcoming, acked, taken) end
return out
