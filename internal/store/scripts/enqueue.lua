-- enqueue.lua: add jobs to one partition; each job succeeds or fails alone.
-- KEYS: see lib.lua.
-- ARGV[1] clock offset; ARGV[2] job count n; then n groups of 10 values:
--   id, format, priority, delay_ms ('' when run_at is given), run_at_ms ('' when delay is given),
--   max_retries, ttr_ms, body, backoff (comma-separated ms, '' for the default), callback_url ('' for none)
-- Returns: {now, status_1, run_at_1, ..., status_n, run_at_n}; status 1 = added, 0 = the id exists.
-- The new jobs enter the delayed set in one ZADD: the per-job cost is one HSETNX and an encode.
local out = {NOW}
local prev = head_score()
local soonest
local scheduled = {}
local n = tonumber(ARGV[2])
for i = 0, n - 1 do
  local a = 3 + i * 10
  local id = ARGV[a]
  local t
  if ARGV[a + 3] ~= '' then t = NOW + tonumber(ARGV[a + 3]) else t = tonumber(ARGV[a + 4]) end
  local j = { -- in the order of the F_ fields
    S_PENDING, tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), NOW, t - NOW, 0,
    tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6]), ARGV[a + 7],
    split_numbers(ARGV[a + 8]), nonempty(ARGV[a + 9]),
  }
  if redis.call('HSETNX', JOBS, id, encode(j)) == 1 then
    scheduled[#scheduled + 1] = t
    scheduled[#scheduled + 1] = id
    if #scheduled >= 2000 then -- unpack's limit is a few thousand values
      redis.call('ZADD', DELAYED, unpack(scheduled))
      scheduled = {}
    end
    if soonest == nil or t < soonest then soonest = t end
    out[#out + 1] = 1
    out[#out + 1] = t
  else
    out[#out + 1] = 0
    out[#out + 1] = 0
  end
end
if #scheduled > 0 then
  redis.call('ZADD', DELAYED, unpack(scheduled))
end
notify_if_sooner(prev, soonest)
return out
