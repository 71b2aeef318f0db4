-- touch.lua: extend a lease.
-- KEYS: see lib.lua. ARGV[1] clock offset; ARGV[2] id; ARGV[3] lease; ARGV[4] ttr in ms (0: the job's).
-- Returns the new lease deadline (Unix ms), or 0 when the lease is not current.
local id = ARGV[2]
local j = owned(id, ARGV[3])
if not j then return 0 end
local ttr = tonumber(ARGV[4])
if ttr <= 0 then ttr = j[F_TTR] end
j[F_LEASE_DEADLINE] = NOW + ttr
-- Remove first: over maxmemory Redis refuses a script whose first write may grow memory, and a
-- running job's lease must still be renewable when Redis is full.
redis.call('ZREM', RESERVED, id)
save(id, j)
redis.call('ZADD', RESERVED, NOW + ttr, id)
return NOW + ttr
