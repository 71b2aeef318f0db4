-- enqueue.lua: add jobs to one partition; each job succeeds or fails alone.
-- KEYS: see lib.lua; while the replay window is on, KEYS[13..] are the ended markers
-- (mark_ended) of the jobs with a fingerprint, in order.
-- ARGV[4] job count n; ARGV[5] the jobs' lanes, a character each: '1' push (a callback URL),
-- '0' pull, and '3' and '2' for the same with a fingerprint of what the caller asked
-- (store.Fingerprint, none for an id the caller did not choose), which is then the record's
-- last field: the last PRINT_LEN bytes of the tail; then n groups of 5 values:
--   id, delay_ms ('' when run_at is given), run_at_ms ('' when delay is given),
--   the record's fields before created at, and those after the delay (both encoded by the caller)
-- Returns: {now, status_1, run_at_1, created_1, ..., status_n, run_at_n, created_n[, traces]};
-- status 1 = added (created is now), 2 = the same job was added by an identical enqueue within
-- the replay window (its run_at and created are the first one's), 0 = the id exists (run_at and
-- created 0). traces, present when a repeat's stored trace headers differ from this call's, is
-- {i, traceparent, tracestate, ...} for those repeats (i from 0, '' for a header the job lacks):
-- the repeat answers the job as stored.
-- The per-job cost is one HSETNX and two string joins; the new jobs enter the delayed set in
-- one ZADD. The call records its time, the positions of the jobs that existed and those of the
-- repeats with their times, from which a second run of the call rebuilds the same answer and
-- stores nothing. The record is read first: by the second run the jobs may have been acked or
-- cancelled, and must not come back.
-- A job with a fingerprint is repeated by an enqueue of the same id and fingerprint within the
-- replay window of its creation, whatever became of it since: it may be due, leased, failed,
-- dead, released or rescheduled (its record says so), or acked, cancelled or deleted dead (its
-- ended marker says so; the first enqueue's trace headers then are not known, and the answer
-- carries this call's). A job without one (an id the caller did not choose) is told by its
-- record: the same fields as this call would store (byte for byte but for the trace headers,
-- which a retry in a new span changes), at the same due time, created no longer than the
-- window ago, never failed nor released or rescheduled. So a caller whose answer was lost may
-- send the same job again and learn that it was stored, without a second job or a second run.
-- The marker is read before the record is added (one GET per job with a fingerprint): another
-- job may have taken the id since, and the retry still answers its own first call.
local n = tonumber(ARGV[4])
local LANES = ARGV[5]

-- add appends values to list t.
local function add(t, ...)
  for _, v in ipairs({...}) do t[#t + 1] = v end
end

-- replay answers a second run of this call from the record of the first run, or is nil when
-- there is none (this is the first run).
local function replay()
  local r = recorded()
  if not r or r == '' then return nil end
  local rec = {cmsgpack.unpack(r)}
  local now, existed, repeats = rec[1], {}, {}
  for _, i in ipairs(rec[2]) do existed[i] = true end
  local rs = rec[3] or {}
  for k = 1, #rs, 3 do repeats[rs[k]] = {rs[k + 1], rs[k + 2]} end
  local traces = rec[4]
  local out = {now}
  for i = 0, n - 1 do
    local a = 6 + i * 5
    if existed[i] then
      add(out, 0, 0, 0)
    elseif repeats[i] then
      add(out, 2, repeats[i][1], repeats[i][2])
    elseif ARGV[a + 1] ~= '' then
      add(out, 1, now + tonumber(ARGV[a + 1]), now)
    else
      add(out, 1, tonumber(ARGV[a + 2]), now)
    end
  end
  if traces and #traces > 0 then out[#out + 1] = traces end
  return out
end

-- same_but_trace reports whether two records differ at most in their trace headers
-- (traceparent and tracestate), which a call tried again in a new span changes: they do not
-- make it another call; if so it returns the first one's headers (a table, empty when it has
-- none). Fields are scalars, or arrays and maps of scalars (backoff, headers). Only a record
-- that is not byte-equal is unpacked: the cost falls on enqueues of existing ids. (No table or
-- function is made up front: the script would make them on every call.)
local function same_but_trace(a, b)
  local x, y = {cmsgpack.unpack(a)}, {cmsgpack.unpack(b)}
  for i = 1, NFIELDS do
    local xi, yi = x[i], y[i]
    if i == F_HEADERS then xi, yi = xi or {}, yi or {} end
    if type(xi) ~= 'table' or type(yi) ~= 'table' then
      if xi ~= yi then return nil end
    else
      for _, t in ipairs({{xi, yi}, {yi, xi}}) do
        for k, v in pairs(t[1]) do
          if k ~= 'traceparent' and k ~= 'tracestate' and t[2][k] ~= v then return nil end
        end
      end
    end
  end
  return x[F_HEADERS] or {}
end

-- repeat_of answers the due time and creation time of job id, made within the window, when
-- this call repeats its enqueue: its stored fingerprint is print, or, without one, its stored
-- record is the one this call would store for it (head and tail) at the due time this call
-- asks for (delay, or run_at when delay is ''); else nil. A third value, when the stored trace
-- headers may differ from this call's, is the stored headers. The due time answered is the
-- first call's: created plus the delay asked, or the run_at asked.
local function repeat_of(id, print, delay, run_at, head, tail)
  if WINDOW == 0 then return nil end
  local stored = redis.call('HGET', JOBS, id)
  if not stored then return nil end
  local f = {cmsgpack.unpack_limit(stored, F_DELAY)} -- the offset read to, then the fields
  local created, d = f[1 + F_CREATED], f[1 + F_DELAY]
  if NOW - created > WINDOW then return nil end
  if print ~= '' then
    local first = tonumber(run_at)
    if delay ~= '' then first = created + tonumber(delay) end
    if stored == head .. cmsgpack.pack(created, d) .. tail then return first, created end
    local x = pack_values(cmsgpack.unpack(stored))
    if x.n ~= F_PRINT or x[F_PRINT] ~= print then return nil end
    return first, created, x[F_HEADERS] or {}
  end
  if delay ~= '' then
    if d ~= tonumber(delay) then return nil end
  elseif created + d ~= tonumber(run_at) then
    return nil
  end
  local wanted = head .. cmsgpack.pack(created, d) .. tail
  if stored == wanted then return created + d, created end
  local headers = same_but_trace(stored, wanted)
  if not headers then return nil end
  return created + d, created, headers
end

local again = replay()
if again then return again end

local out = {NOW}
local prev = head_score()
local soonest = {}
local scheduled = {}
local existed = {}
local repeats = {}
local traces -- made only when a repeat needs it
local marker = 12 -- the last ended marker's position in KEYS
for i = 0, n - 1 do
  local a = 6 + i * 5
  local id, delay = ARGV[a], ARGV[a + 1]
  local kind = string.byte(LANES, i + 1) - 48 -- 1: push; 2: a fingerprint
  local t
  if delay ~= '' then t = NOW + tonumber(delay) else t = tonumber(ARGV[a + 2]) end
  -- A job that ended within the window: its marker answers an identical enqueue (the first
  -- call's due time: created plus the delay asked, or the run_at asked, t).
  local print, run_at, created = ''
  if kind >= 2 then
    print = string.sub(ARGV[a + 4], -PRINT_LEN)
    if WINDOW > 0 then
      marker = marker + 1
      local m = redis.call('GET', KEYS[marker])
      if m then
        local _, _, c, p = cmsgpack.unpack(m)
        if p == print and NOW - c <= WINDOW then
          created, run_at = c, t
          if delay ~= '' then run_at = c + tonumber(delay) end
        end
      end
    end
  end
  local rec = ARGV[a + 3] .. cmsgpack.pack(NOW, t - NOW) .. ARGV[a + 4]
  if run_at then
    add(repeats, i, run_at, created)
    add(out, 2, run_at, created)
  elseif redis.call('HSETNX', JOBS, id, rec) == 1 then
    scheduled[#scheduled + 1] = string.format('%d', t)
    scheduled[#scheduled + 1] = id
    local lane = 'pull'
    if kind % 2 == 1 then lane = 'push' end
    if soonest[lane] == nil or t < soonest[lane] then soonest[lane] = t end
    add(out, 1, t, NOW)
  else
    local headers
    run_at, created, headers = repeat_of(id, print, delay, ARGV[a + 2], ARGV[a + 3], ARGV[a + 4])
    if run_at then
      add(repeats, i, run_at, created)
      add(out, 2, run_at, created)
      if headers then
        traces = traces or {}
        add(traces, i, headers.traceparent or '', headers.tracestate or '')
      end
    else
      existed[#existed + 1] = i
      add(out, 0, 0, 0)
    end
  end
end
bulk('ZADD', DELAYED, scheduled)
for lane, t in pairs(soonest) do notify_if_sooner(prev, t, lane) end
-- Recorded even when nothing was stored: a second run of a call that met existing jobs or
-- repeats must answer as this one did, whatever happened to those jobs since.
if traces then
  record(NOW, existed, repeats, traces)
  out[#out + 1] = traces
else
  record(NOW, existed, repeats)
end
return out
