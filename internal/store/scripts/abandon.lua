-- abandon.lua: undo a reserve call whose answer its caller never read (the caller gave up, or
-- the connection broke): the jobs it leased are put back as if never leased, their attempt not
-- counted, and a call that has not run yet never will.
-- KEYS: see lib.lua; CALL is the reserve call's record.
-- ARGV[4] the reserve call's lease secret.
-- Returns {0} when the call had not run (its acks did not happen either), else {1, acked, n}:
-- acked as the reserve answered it, n the jobs put back.
local r = recorded()
if r == '' then return {0} end
if not r then
  -- Not run, or run without leasing or acking anything: either way nothing is left to undo,
  -- and a late arrival of the call must not lease what nobody will read.
  if WINDOW > 0 then redis.call('SET', CALL, '', 'PX', WINDOW) end
  return {0}
end
local rec = {cmsgpack.unpack(r)}
local n = 0
local lanes = {}
for _, id in ipairs(rec[4]) do
  local token = lease_token(ARGV[4], id)
  local h = redis.call('HGET', LEASES, id)
  if h == token or h == token .. '+' then
    local job = redis.call('HGET', JOBS, id)
    if job then
      unlease(id, job)
      -- Nobody received it: its start does not count against the rate limit.
      redis.call('ZREM', STARTS, h)
      local _, _, callback = cmsgpack.unpack_limit(job, 2)
      if callback then lanes.push = true else lanes.pull = true end
      n = n + 1
    end
  end
end
for lane in pairs(lanes) do notify_if_sooner(nil, NOW, lane) end
record(rec[1], rec[2], rec[3], {})
return {1, rec[3], n}
