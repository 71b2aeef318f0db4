-- release.lua: give a lease back unfinished (a worker shutting down); the job is due again
-- after a delay (none for a Worker) and the attempt is not counted.
-- KEYS: see lib.lua (KEYS[12] is per lease: releasing a lease again answers as the first did).
-- ARGV[4] id; ARGV[5] lease; ARGV[6] delay in ms; ARGV[7] the job's new stored priority, or ''
-- to keep it.
-- Returns 1 when released, 0 when the lease is not current.
local id = ARGV[4]
if not owned(id, ARGV[5]) then
  -- A second run of a call that settled the lease answers as the first did.
  local r = recorded()
  if r and r ~= '' then return cmsgpack.unpack(r) end
  return 0
end
local j = load_job(id)
if not j then return 0 end
redis.call('ZREM', RESERVED, id)
redis.call('HDEL', LEASES, id)
if ARGV[7] ~= '' then j[F_PRIORITY] = tonumber(ARGV[7]) end
local prev = head_score()
local due = NOW + tonumber(ARGV[6])
schedule(id, j, due)
save(id, j)
notify_if_sooner(prev, due, lane_of(j))
announce_free(1)
record(1)
return 1
