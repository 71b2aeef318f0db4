-- ack.lua: reserved jobs are done; remove them.
-- KEYS: see lib.lua; then KEYS[NKEYS + k] is the record of pair k's ack, k counting from 1 (per
-- lease, not per call, so that acking a lease again answers as the first ack did, whichever
-- call carried it); for n pairs, KEYS[NKEYS + n + m] is the ended marker (mark_ended) of the job
-- of the m-th pair whose lease is marked (held).
-- ARGV[4..]: pairs of id, lease.
-- Returns ack_leases()'s value per pair: 1 when acked now or by an earlier ack of the same
-- lease, 0 when the lease is not the job's current one.
local pairs_n = (#ARGV - 3) / 2
local ended
if #KEYS > NKEYS + pairs_n then ended = NKEYS + 1 + pairs_n end
local out = ack_leases(4, ended)
local freed = 0
for k, v in ipairs(out) do
  local key = KEYS[NKEYS + k]
  if v == 1 then
    freed = freed + 1
    if WINDOW > 0 then redis.call('SET', key, '1', 'PX', ARGV[2]) end
  elseif redis.call('GET', key) == '1' then
    out[k] = 1
  end
end
announce_free(freed)
return out
