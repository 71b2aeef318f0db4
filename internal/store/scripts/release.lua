-- release.lua: give a lease back unfinished; the job is due again after a delay, or at a given
-- time, and the attempt is not counted. A snooze (a consumer putting the job back for later)
-- counts in the job's snoozes; past its max_snoozes, when it has one, the job goes dead instead,
-- as a failed attempt would (fail in lib.lua: history, archive and dead letters agree). A release
-- that is not the consumer's choice (a Worker shutting down, a beanstalkd client disconnecting)
-- counts nothing.
-- KEYS: see lib.lua (CALL is per lease: releasing a lease again answers as the first did).
-- ARGV[4] id; ARGV[5] lease; ARGV[6] delay in ms; ARGV[7] the job's new stored priority, or ''
-- to keep it; ARGV[8] '1' for a snooze, else '0' (or absent); ARGV[9] the due time in Unix ms
-- instead of the delay, or '' (or absent).
-- Returns 1 when released, 2 when the job went dead (past its max_snoozes), 0 when the lease is
-- not current.
local id = ARGV[4]
if not owned(id, ARGV[5]) then
  -- A second run of a call that settled the lease answers as the first did.
  local r = recorded()
  if r and r ~= '' then return cmsgpack.unpack(r) end
  return 0
end
local j = load_job(id)
if not j then return 0 end
if ARGV[7] ~= '' then j[F_PRIORITY] = tonumber(ARGV[7]) end
if ARGV[8] == '1' then
  local snoozes = (j[F_SNOOZES] or 0) + 1
  j[F_SNOOZES] = snoozes
  local most = j[F_MAX_SNOOZES]
  if most and most > 0 and snoozes > most then
    fail(id, j, NOW, string.format('snoozed more than max_snoozes (%d) times', most), nil, true)
    announce_free(1)
    record(2)
    return 2
  end
end
redis.call('ZREM', RESERVED, id)
redis.call('HDEL', LEASES, id)
local prev = head_score()
local due = NOW + tonumber(ARGV[6])
if ARGV[9] and ARGV[9] ~= '' then due = tonumber(ARGV[9]) end
schedule(id, j, due)
save(id, j)
notify_if_sooner(prev, due, lane_of(j))
announce_free(1)
record(1)
return 1
