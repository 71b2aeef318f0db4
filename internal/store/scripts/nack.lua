-- nack.lua: a reserved job's attempt failed; retry it after a delay, or bury it.
-- KEYS: see lib.lua (CALL is per lease: nacking a lease again answers as the first did).
-- ARGV[4] id; ARGV[5] lease; ARGV[6] error text; ARGV[7] delay in ms ('' for the job's backoff
-- step); ARGV[8] '1' to send it to the dead letters; ARGV[9] the job's new stored priority, or
-- '' to keep it.
-- Returns 1 when it will be retried, 2 when it went dead, 0 when the lease is not current.
local id = ARGV[4]
if not owned(id, ARGV[5]) then
  -- A second run of a call that settled the lease answers as the first did.
  local r = recorded()
  if r and r ~= '' then return cmsgpack.unpack(r) end
  return 0
end
local j = load_job(id)
if not j then return 0 end
local delay = nil
if ARGV[7] ~= '' then delay = tonumber(ARGV[7]) end
if ARGV[9] ~= '' then j[F_PRIORITY] = tonumber(ARGV[9]) end
local outcome = fail(id, j, NOW, ARGV[6], delay, ARGV[8] == '1')
announce_free(1)
record(outcome)
return outcome
