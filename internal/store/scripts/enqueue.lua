-- enqueue.lua: add jobs to one partition; each job succeeds or fails alone.
-- KEYS: see lib.lua.
-- ARGV[1] clock offset; ARGV[2] job count n; then n groups of 10 values:
--   id, format, priority, delay_ms ('' when run_at is given), run_at_ms ('' when delay is given),
--   max_retries, ttr_ms, body, backoff (comma-separated ms, '' for the default), callback_url ('' for none)
-- Returns: {now, status_1, run_at_1, ..., status_n, run_at_n}; status 1 = added, 0 = the id exists.
local out = {NOW}
local prev = head_score()
local soonest
local n = tonumber(ARGV[2])
for i = 0, n - 1 do
  local a = 3 + i * 10
  local id = ARGV[a]
  if redis.call('HEXISTS', JOBS, id) == 1 then
    out[#out + 1] = 0
    out[#out + 1] = 0
  else
    local t
    if ARGV[a + 3] ~= '' then t = NOW + tonumber(ARGV[a + 3]) else t = tonumber(ARGV[a + 4]) end
    local j = {}
    j[F_FORMAT] = tonumber(ARGV[a + 1])
    j[F_PRIORITY] = tonumber(ARGV[a + 2])
    j[F_CREATED] = NOW
    j[F_ATTEMPTS] = 0
    j[F_MAX_RETRIES] = tonumber(ARGV[a + 5])
    j[F_TTR] = tonumber(ARGV[a + 6])
    j[F_BODY] = ARGV[a + 7]
    j[F_BACKOFF] = split_numbers(ARGV[a + 8])
    j[F_CALLBACK] = nonempty(ARGV[a + 9])
    schedule(id, j, t)
    save(id, j)
    if soonest == nil or t < soonest then soonest = t end
    out[#out + 1] = 1
    out[#out + 1] = t
  end
end
notify_if_sooner(prev, soonest)
return out
