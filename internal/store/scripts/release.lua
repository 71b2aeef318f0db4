-- release.lua: give a lease back unfinished (a worker shutting down); the job is due again at
-- once and the attempt is not counted.
-- KEYS: see lib.lua. ARGV[1] clock offset; ARGV[2] id; ARGV[3] lease.
-- Returns 1 when released, 0 when the lease is not current.
local id = ARGV[2]
local j = owned(id, ARGV[3])
if not j then return 0 end
redis.call('ZREM', RESERVED, id)
j[F_ATTEMPTS] = j[F_ATTEMPTS] - 1
j[F_LEASE] = nil
j[F_LEASE_DEADLINE] = nil
local prev = head_score()
schedule(id, j, NOW)
save(id, j)
notify_if_sooner(prev, NOW)
return 1
