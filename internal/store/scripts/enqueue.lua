-- enqueue.lua: add jobs to one partition; each job succeeds or fails alone.
-- KEYS: see lib.lua.
-- ARGV[3] job count n; ARGV[4] the jobs' lanes, a character each: '1' push (a callback URL),
-- '0' pull; then n groups of 5 values:
--   id, delay_ms ('' when run_at is given), run_at_ms ('' when delay is given),
--   the record's fields before created at, and those after the delay (both encoded by the caller)
-- Returns: {now, status_1, run_at_1, ..., status_n, run_at_n}; status 1 = added, 0 = the id exists.
-- The per-job cost is one HSETNX and two string joins; the new jobs enter the delayed set in
-- one ZADD. The call records its time and the positions of the jobs that existed, from which a
-- second run of the call rebuilds the same answer and stores nothing. The record is read first:
-- by the second run the jobs may have been acked or cancelled, and must not come back.
local n = tonumber(ARGV[3])
local LANES = ARGV[4]

-- replay answers a second run of this call from the record of the first run, or is nil when
-- there is none (this is the first run).
local function replay()
  local r = recorded()
  if not r or r == '' then return nil end
  local rec = {cmsgpack.unpack(r)}
  local now, existed = rec[1], {}
  for _, i in ipairs(rec[2]) do existed[i] = true end
  local out = {now}
  for i = 0, n - 1 do
    local a = 5 + i * 5
    if existed[i] then
      out[#out + 1] = 0
      out[#out + 1] = 0
    elseif ARGV[a + 1] ~= '' then
      out[#out + 1] = 1
      out[#out + 1] = now + tonumber(ARGV[a + 1])
    else
      out[#out + 1] = 1
      out[#out + 1] = tonumber(ARGV[a + 2])
    end
  end
  return out
end

local again = replay()
if again then return again end

local out = {NOW}
local prev = head_score()
local soonest = {}
local scheduled = {}
local existed = {}
for i = 0, n - 1 do
  local a = 5 + i * 5
  local id = ARGV[a]
  local t
  if ARGV[a + 1] ~= '' then t = NOW + tonumber(ARGV[a + 1]) else t = tonumber(ARGV[a + 2]) end
  local rec = ARGV[a + 3] .. cmsgpack.pack(NOW, t - NOW) .. ARGV[a + 4]
  if redis.call('HSETNX', JOBS, id, rec) == 1 then
    scheduled[#scheduled + 1] = t
    scheduled[#scheduled + 1] = id
    local lane = 'pull'
    if string.byte(LANES, i + 1) == 49 then lane = 'push' end
    if soonest[lane] == nil or t < soonest[lane] then soonest[lane] = t end
    out[#out + 1] = 1
    out[#out + 1] = t
  else
    existed[#existed + 1] = i
    out[#out + 1] = 0
    out[#out + 1] = 0
  end
end
bulk('ZADD', DELAYED, scheduled)
for lane, t in pairs(soonest) do notify_if_sooner(prev, t, lane) end
if #scheduled > 0 then record(NOW, existed) end
return out
