-- enqueue.lua: add jobs to one partition; each job succeeds or fails alone.
-- KEYS: see lib.lua; KEYS[NKEYS + 1..] are the ended markers (mark_ended) of the jobs with a
-- fingerprint, in order.
-- ARGV[4] job count n; ARGV[5] the jobs' kinds, a character each, '0' plus the sum of: 1 for a
-- push job (a callback URL); 2 for a fingerprint of what the caller asked (store.Fingerprint,
-- none for an id the caller did not choose), which is then the record's last field: the last
-- PRINT_LEN bytes of the tail; 4 when the job names no unique_for, and takes its topic's or the
-- caller's (a fingerprinted job only); 8 times what to do when the id exists: 0 reject, 1
-- keep, 2 replace; 32 for the job of a lone call, due after a delay no shorter than the replay
-- window, whose call id is the job's id, which the enqueuer made (see below). Then n groups of
-- 5 values:
--   id, delay_ms ('' when run_at is given), run_at_ms ('' when delay is given),
--   the record's fields before created at, and those after the delay (both encoded by the caller)
-- and, when a job takes a default unique_for, the caller's (ms) may follow.
-- Returns: {now, status_1, a_1, b_1, ..., status_n, a_n, b_n[, traces[, jobs]]}; status
-- 1 = added (a is its run_at, created is now, and b the default unique_for it took, 0 for
-- none), 2 = the same job was added by an
-- identical enqueue within the replay window (a and b are the first one's run_at and created),
-- 0 = the id exists (a and b 0), 3 = the id is taken by a job that ended within its unique_for
-- (a is END_ACKED, END_CANCELLED or END_DEAD, b when), 4 = kept (on_conflict keep) and
-- 6 = replaced (on_conflict replace): the job is in jobs, 5 = not replaced, being reserved or
-- dead (a is its state). traces, present when a repeat's stored trace headers differ from this
-- call's (or jobs is), is {i, traceparent, tracestate, ...} for those repeats (i from 0, '' for
-- a header the job lacks): the repeat answers the job as stored. jobs is {i, job, ...}, each
-- job as reply() makes it.
-- The per-job cost is one HSETNX and two string joins; the new jobs enter the delayed set in
-- one ZADD. The call records its time, the positions of the jobs that existed and those of the
-- repeats with their times, from which a second run of the call rebuilds the same answer and
-- stores nothing (a call that met an ended id, kept or replaced a job records its whole
-- answer). The record is read first: by the second run the jobs may have been acked or
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
-- A replace is never a repeat while the job exists: each one moves the job (debounce).
-- The marker is read before the record is added (one GET per job with a fingerprint): another
-- job may have taken the id since, and the retry still answers its own first call.
-- A lone call (kind 32: one job, whose id the enqueuer made and named the call after) records
-- nothing when the job it adds cannot be delivered within the replay window (due that long
-- after now or later): while the job exists, its own record answers a second run of the call
-- (the job exists: this call made it, as nobody else had its id), and what moves it earlier or
-- ends it within the window (cancel, reschedule, reserve-job, kick) keeps the call's record
-- then (keep_call). So a job enqueued one call at a time costs no key but its own.
local n = tonumber(ARGV[4])
local LANES = ARGV[5]
-- LONE: this is a lone call (kind 32, one job only). Told once, so that a call of many jobs
-- pays nothing for it.
local LONE = n == 1 and string.byte(LANES) >= 80

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
  if rec[1] == 'whole' then return rec[2] end
  local now, existed, repeats = rec[1], {}, {}
  for _, i in ipairs(rec[2]) do existed[i] = true end
  local rs = rec[3] or {}
  for k = 1, #rs, 3 do repeats[rs[k]] = {rs[k + 1], rs[k + 2]} end
  local traces, unique = rec[4], rec[5] or 0
  local out = {now}
  for i = 0, n - 1 do
    local a = 6 + i * 5
    if existed[i] then
      add(out, 0, 0, 0)
    elseif repeats[i] then
      add(out, 2, repeats[i][1], repeats[i][2])
    else
      local u = 0
      if (string.byte(LANES, i + 1) - 48) % 8 >= 4 then u = unique end
      if ARGV[a + 1] ~= '' then
        add(out, 1, now + tonumber(ARGV[a + 1]), u)
      else
        add(out, 1, tonumber(ARGV[a + 2]), u)
      end
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
    if x.n <= F_MAX_SNOOZES or x[x.n] ~= print then return nil end
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
local jobs -- made only when a job is kept or replaced: {i, job as reply() makes it, ...}
local whole = false -- whether the call's record must be its whole answer (see replay)
local unrecorded = false -- whether a lone call records nothing (see above)
local marker = NKEYS -- the last ended marker's position in KEYS
-- The unique_for of a job that names none: the topic's (its settings' unique_for_ms), else the
-- caller's default (the argument after the jobs, when given), else 0; read once per call.
local default_unique
for i = 0, n - 1 do
  local a = 6 + i * 5
  local id, delay = ARGV[a], ARGV[a + 1]
  -- kind's bits: 1 push, 2 a fingerprint, 4 the topic's or caller's unique_for applies; then
  -- kind / 8 is what to do when the id exists: 0 reject, 1 keep, 2 replace.
  local kind = string.byte(LANES, i + 1) - 48
  if LONE then kind = kind - 32 end
  local printed = kind % 4 >= 2
  local lane = 'pull'
  if kind % 2 == 1 then lane = 'push' end
  local t
  if delay ~= '' then t = NOW + tonumber(delay) else t = tonumber(ARGV[a + 2]) end
  local tail = ARGV[a + 4]
  -- A job that ended within the window: its marker answers an identical enqueue (the first
  -- call's due time: created plus the delay asked, or the run_at asked, t). One that ended
  -- within its unique_for keeps its id taken.
  local print, run_at, created, ended, ended_at = ''
  local applied = 0 -- the default unique_for the job takes
  if printed then
    print = string.sub(tail, -PRINT_LEN)
    marker = marker + 1
    local m = redis.call('GET', KEYS[marker])
    if m then
      local outcome, at, c, p, u = cmsgpack.unpack(m)
      if p == print and NOW - c <= WINDOW then
        created, run_at = c, t
        if delay ~= '' then run_at = c + tonumber(delay) end
      elseif NOW - at < (u or 0) then
        ended, ended_at = outcome, at
      end
    end
    if kind % 8 >= 4 and not run_at and not ended then
      default_unique = default_unique or
        tonumber(redis.call('HGET', SETTINGS, 'unique_for_ms') or ARGV[6 + 5 * n] or '0')
      applied = default_unique
      if default_unique > 0 then
        -- Set before the fingerprint (at field 16 in the tail), which moves to F_PRINT.
        local cut = #tail - PRINT_LEN - 1
        tail = string.sub(tail, 1, cut) .. cmsgpack.pack(default_unique) .. '\192\192' .. string.sub(tail, cut + 1)
      end
    end
  end
  local rec = ARGV[a + 3] .. cmsgpack.pack(NOW, t - NOW) .. tail
  if run_at then
    add(repeats, i, run_at, created)
    add(out, 2, run_at, created)
  elseif ended then
    whole = true
    add(out, 3, ended, ended_at)
  elseif redis.call('HSETNX', JOBS, id, rec) == 1 then
    scheduled[#scheduled + 1] = string.format('%d', t)
    scheduled[#scheduled + 1] = id
    if soonest[lane] == nil or t < soonest[lane] then soonest[lane] = t end
    out[#out + 1] = 1
    out[#out + 1] = t
    out[#out + 1] = applied
    if LONE then unrecorded = WINDOW > 0 and t - NOW >= WINDOW end
  else
    local headers, died, job, state
    local conflict = (kind - kind % 8) / 8
    if conflict ~= 2 then
      run_at, created, headers = repeat_of(id, print, delay, ARGV[a + 2], ARGV[a + 3], tail)
    end
    if not run_at and redis.call('ZSCORE', DEAD, id) then
      -- Dead within its unique_for of that: its id is taken as if it had ended.
      local j = pack_values(cmsgpack.unpack(redis.call('HGET', JOBS, id)))
      if j.n == F_PRINT and NOW - (j[F_DIED_AT] or 0) < (j[F_UNIQUE_FOR] or 0) then died = j[F_DIED_AT] end
    end
    if run_at and LONE then
      -- This call's first run added the job and recorded nothing: answer as it did.
      out[1] = created
      add(out, 1, run_at, 0)
      unrecorded = true
    elseif run_at then
      add(repeats, i, run_at, created)
      add(out, 2, run_at, created)
      if headers then
        traces = traces or {}
        add(traces, i, headers.traceparent or '', headers.tracestate or '')
      end
    elseif died then
      whole = true
      add(out, 3, END_DEAD, died)
    elseif conflict == 0 then
      existed[#existed + 1] = i
      add(out, 0, 0, 0)
    else
      whole = true
      -- A job this call added comes first: it is due as asked before it is kept or replaced.
      bulk('ZADD', DELAYED, scheduled)
      scheduled = {}
      -- keep and replace come with the script only when a job asks for them (lib_conflict.lua):
      -- the functions a script defines cost every call of it.
      if conflict == 1 then
        job = keep(id)
      else
        job, state = replace(id, rec, t, lane)
      end
      if job then
        jobs = jobs or {}
        add(jobs, i, job)
        add(out, 2 + 2 * conflict, 0, 0) -- 4 kept, 6 replaced
      else
        add(out, 5, state, 0)
      end
    end
  end
end
bulk('ZADD', DELAYED, scheduled)
for lane, t in pairs(soonest) do notify_if_sooner(prev, t, lane) end
if jobs then
  out[#out + 1] = traces or {}
  out[#out + 1] = jobs
elseif traces then
  out[#out + 1] = traces
end
-- Recorded even when nothing was stored: a second run of a call that met existing jobs or
-- repeats must answer as this one did, whatever happened to those jobs since. A call that met
-- ended ids, or kept or replaced jobs, records its whole answer.
if unrecorded then
  return out
elseif whole then
  record('whole', out)
elseif traces then
  record(NOW, existed, repeats, traces, default_unique)
elseif default_unique then
  record(NOW, existed, repeats, false, default_unique)
else
  record(NOW, existed, repeats)
end
return out
