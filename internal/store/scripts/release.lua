-- release.lua: give a lease back unfinished (a worker shutting down); the job is due again at
-- once and the attempt is not counted.
-- KEYS: see lib.lua. ARGV[1] clock offset; ARGV[2] id; ARGV[3] lease.
-- Returns 1 when released, 0 when the lease is not current.
local id = ARGV[2]
local j = owned(id, ARGV[3])
if not j then return 0 end
redis.call('ZREM', K.reserved, id)
j[F.attempts] = j[F.attempts] - 1
j[F.lease] = nil
j[F.lease_deadline] = nil
local prev = head_score()
schedule(id, j, NOW)
save(id, j)
notify_if_sooner(prev, NOW)
return 1
