-- touch.lua: extend a lease.
-- KEYS: see lib.lua. ARGV[4] id; ARGV[5] lease; ARGV[6] ttr in ms (0: the job's).
-- Returns the new lease deadline (Unix ms), or 0 when the lease is not current.
local id = ARGV[4]
if not owned(id, ARGV[5]) then
  -- A second run of a call that settled the lease answers as the first did.
  local r = recorded()
  if r and r ~= '' then return cmsgpack.unpack(r) end
  return 0
end
local ttr = tonumber(ARGV[6])
if ttr <= 0 then
  local rec = redis.call('HGET', JOBS, id)
  if not rec then return 0 end
  local _, _, _, job_ttr = cmsgpack.unpack_limit(rec, 3)
  ttr = job_ttr
end
-- Remove first: over maxmemory Redis refuses a script whose first write may grow memory, and a
-- running job's lease must still be renewable when Redis is full.
-- A shorter lease that now ends before any other is announced, as a reserve's is; a longer one
-- is learnt by whoever wakes at its old deadline.
local rhead = lease_head()
redis.call('ZREM', RESERVED, id)
redis.call('ZADD', RESERVED, NOW + ttr, id)
announce_lease(rhead, NOW + ttr)
record(NOW + ttr)
return NOW + ttr
