-- enqueue.lua: add jobs to one partition; each job succeeds or fails alone.
-- KEYS: see lib.lua.
-- ARGV[1] clock offset; ARGV[2] job count n; then n groups of 5 values:
--   id, delay_ms ('' when run_at is given), run_at_ms ('' when delay is given),
--   the record's fields before created at, and those after the delay (both encoded by the caller)
-- Returns: {now, status_1, run_at_1, ..., status_n, run_at_n}; status 1 = added, 0 = the id exists.
-- The per-job cost is one HSETNX and two string joins; the new jobs enter the delayed set in
-- one ZADD.
local out = {NOW}
local prev = head_score()
local soonest
local scheduled = {}
local n = tonumber(ARGV[2])
for i = 0, n - 1 do
  local a = 3 + i * 5
  local id = ARGV[a]
  local t
  if ARGV[a + 1] ~= '' then t = NOW + tonumber(ARGV[a + 1]) else t = tonumber(ARGV[a + 2]) end
  local rec = ARGV[a + 3] .. cmsgpack.pack(NOW, t - NOW) .. ARGV[a + 4]
  if redis.call('HSETNX', JOBS, id, rec) == 1 then
    scheduled[#scheduled + 1] = t
    scheduled[#scheduled + 1] = id
    if soonest == nil or t < soonest then soonest = t end
    out[#out + 1] = 1
    out[#out + 1] = t
  else
    out[#out + 1] = 0
    out[#out + 1] = 0
  end
end
bulk('ZADD', DELAYED, scheduled)
notify_if_sooner(prev, soonest)
return out
