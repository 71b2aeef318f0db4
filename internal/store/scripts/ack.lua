-- ack.lua: reserved jobs are done; remove them. Records are not read.
-- KEYS: see lib.lua. ARGV[1] clock offset; then pairs of id, lease.
-- Returns one value per pair: 1 when acked, 0 when the lease is not the job's current,
-- unexpired one (the job is then left as it is).
local out = {}
local done = {}
for i = 2, #ARGV, 2 do
  local id = ARGV[i]
  if not done[id] and owned(id, ARGV[i + 1]) then
    done[id] = true
    done[#done + 1] = id
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
bulk('HDEL', JOBS, done)
bulk('HDEL', LEASES, done)
bulk('ZREM', RESERVED, done)
return out
