-- reserve_job.lua: lease one job by id, in any state but reserved (beanstalkd's reserve-job):
-- a delayed, ready or dead job leaves its set and is leased for its TTR, whatever the topic's
-- pause and limits. A dead job is dead no more.
-- KEYS: see lib.lua; KEYS[NKEYS + 1] is the record of the call that enqueued the job, if that
-- was a lone one (keep_call). ARGV[4] id; ARGV[5] lease secret (the token is lease_token(secret, id),
-- held).
-- Returns the job as reply(), or false when it does not exist or is reserved. A replay answers
-- the job while its lease is still the one this call gave it.
local id = ARGV[4]
local token = lease_token(ARGV[5], id)
local function leased_now()
  local rec = redis.call('HGET', JOBS, id)
  if not rec then return false end
  local h = redis.call('HGET', LEASES, id)
  if h ~= token and h ~= token .. '+' then return false end
  return {id, rec, S_RESERVED, h, tonumber(redis.call('ZSCORE', RESERVED, id))}
end
if recorded() then return leased_now() end
local rec = redis.call('HGET', JOBS, id)
if not rec or redis.call('HEXISTS', LEASES, id) == 1 then return false end
redis.call('ZREM', DELAYED, id)
redis.call('ZREM', READY, id)
redis.call('ZREM', READY_PUSH, id)
if redis.call('ZREM', DEAD, id) == 1 then
  local j = load_job(id)
  j[F_DIED_AT] = nil
  rec = save(id, j)
end
local _, _, _, ttr = cmsgpack.unpack_limit(rec, 3)
local deadline = NOW + ttr
local rhead = lease_head()
token = held(token, rec)
redis.call('HSET', LEASES, id, token)
redis.call('ZADD', RESERVED, deadline, id)
-- A lease that ends before any other is announced (see reserve.lua).
announce_lease(rhead, deadline)
keep_call(KEYS[NKEYS + 1], rec)
record(1)
return {id, rec, S_RESERVED, token, deadline}
