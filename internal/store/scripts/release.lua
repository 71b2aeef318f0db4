-- release.lua: give a lease back unfinished (a worker shutting down); the job is due again at
-- once and the attempt is not counted.
-- KEYS: see lib.lua. ARGV[1] clock offset; ARGV[2] id; ARGV[3] lease.
-- Returns 1 when released, 0 when the lease is not current.
local id = ARGV[2]
if not owned(id, ARGV[3]) then return 0 end
local j = load_job(id)
if not j then return 0 end
redis.call('ZREM', RESERVED, id)
redis.call('HDEL', LEASES, id)
local prev = head_score()
schedule(id, j, NOW)
save(id, j)
notify_if_sooner(prev, NOW)
return 1
