-- lib.lua: shared prelude, prepended to every delayq script when it is loaded.
--
-- KEYS (the same for every script, built by internal/keys, all in one partition's hash slot):
--   KEYS[1] jobs       HASH  job id -> job record
--   KEYS[2] delayed    ZSET  job id, score = due time (Unix ms)
--   KEYS[3] ready      ZSET  due pull jobs, score = ready_score(priority, due time)
--   KEYS[4] ready:push ZSET  due jobs with a callback URL, same scores
--   KEYS[5] reserved   ZSET  leased job ids, score = lease deadline (Unix ms)
--   KEYS[6] dead       ZSET  dead job ids, score 0 (paged by id)
--   KEYS[7] notify     shard channel: the new earliest due time, when it moves earlier
-- ARGV[1] is always a clock offset in ms added to the server's TIME: 0 in production, set by tests
-- to move time forward. The Redis server's clock decides every due time; a client's clock never does.
--
-- A job record is a run of MessagePack values in the order of F below; trailing nils are left
-- out, so a job that uses the defaults costs a few bytes beyond its body.

local JOBS, DELAYED, READY, READY_PUSH = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local RESERVED, DEAD, NOTIFY = KEYS[5], KEYS[6], KEYS[7]

-- Record fields, by position. Plain locals rather than tables: a script builds its prelude on
-- every call, and tables made per call cost garbage collection.
local F_STATE, F_FORMAT, F_PRIORITY, F_CREATED, F_DELAY = 1, 2, 3, 4, 5
local F_ATTEMPTS, F_MAX_RETRIES, F_TTR, F_BODY, F_BACKOFF = 6, 7, 8, 9, 10
local F_CALLBACK, F_LAST_ERROR, F_LEASE, F_LEASE_DEADLINE, F_DIED_AT = 11, 12, 13, 14, 15
local NFIELDS = 15

-- Record states. Replies split S_PENDING into delayed (1) and ready (2) by the clock.
local S_PENDING, S_RESERVED, S_DEAD = 1, 3, 4

-- default_backoff is the backoff of a job that names none; the Go package's DefaultBackoff
-- must match it.
local function default_backoff()
  return {15000, 180000, 600000, 1800000, 3600000, 7200000, 21600000, 54000000}
end

-- ready_score orders due jobs by priority (higher first), then due time. Priorities are within
-- +-1000 and due times below 2^43 ms, so every score is an exact double.
local PRIORITY_UNIT = 8796093022208 -- 2^43

local function ready_score(priority, run_at)
  return -priority * PRIORITY_UNIT + run_at
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
end

local NOW = now_ms()

local function pack_values(...)
  return {n = select('#', ...), ...}
end

local function decode(rec)
  return pack_values(cmsgpack.unpack(rec))
end

local function encode(j)
  local n = NFIELDS
  while n > 0 and j[n] == nil do n = n - 1 end
  return cmsgpack.pack(unpack(j, 1, n))
end

local function load_job(id)
  local rec = redis.call('HGET', JOBS, id)
  if not rec then return nil end
  return decode(rec)
end

local function save(id, j)
  redis.call('HSET', JOBS, id, encode(j))
end

local function run_at(j)
  return j[F_CREATED] + j[F_DELAY]
end

local function head_score()
  local h = redis.call('ZRANGE', DELAYED, 0, 0, 'WITHSCORES')
  if #h == 0 then return nil end
  return tonumber(h[2])
end

-- notify_if_sooner tells waiting consumers about a due time earlier than the partition's
-- earliest before the change (prev, nil when the partition had none).
local function notify_if_sooner(prev, t)
  if t and (prev == nil or t < prev) then
    redis.call('SPUBLISH', NOTIFY, string.format('%.0f', t))
  end
end

local function schedule(id, j, t)
  j[F_STATE] = S_PENDING
  j[F_DELAY] = t - j[F_CREATED]
  redis.call('ZADD', DELAYED, t, id)
end

local function bury(id, j)
  j[F_STATE] = S_DEAD
  j[F_DIED_AT] = NOW
  redis.call('ZADD', DEAD, 0, id)
end

local function backoff_for(j, retry)
  local steps = j[F_BACKOFF] or default_backoff()
  if retry > #steps then retry = #steps end
  return steps[retry]
end

-- fail ends a reserved job's attempt, which ended at time since: it goes dead when its retries
-- are used up or when dead is true, else it is due again delay (or its backoff step when delay
-- is nil) after since. Returns 2 when the job went dead, 1 when it will be retried.
local function fail(id, j, since, err, delay, dead)
  redis.call('ZREM', RESERVED, id)
  j[F_LAST_ERROR] = err
  j[F_LEASE] = nil
  j[F_LEASE_DEADLINE] = nil
  local outcome
  if dead or j[F_ATTEMPTS] > j[F_MAX_RETRIES] then
    bury(id, j)
    outcome = 2
  else
    local prev = head_score()
    local t = since + (delay or backoff_for(j, j[F_ATTEMPTS]))
    schedule(id, j, t)
    notify_if_sooner(prev, t)
    outcome = 1
  end
  save(id, j)
  return outcome
end

-- expire_leases fails up to limit jobs whose lease deadline has passed; their backoff counts
-- from the deadline, not from when this call noticed it.
local function expire_leases(limit)
  local ids = redis.call('ZRANGE', RESERVED, '-inf', NOW, 'BYSCORE', 'LIMIT', 0, limit)
  for _, id in ipairs(ids) do
    local j = load_job(id)
    if j then
      fail(id, j, j[F_LEASE_DEADLINE], 'ttr exceeded', nil, false)
    else
      redis.call('ZREM', RESERVED, id)
    end
  end
  return #ids
end

-- promote moves up to limit due jobs from delayed to their ready set.
local function promote(limit)
  local ids = redis.call('ZRANGE', DELAYED, '-inf', NOW, 'BYSCORE', 'LIMIT', 0, limit)
  if #ids == 0 then return 0 end
  -- Remove first: over maxmemory Redis refuses a script whose first write may grow memory
  -- (ZADD) but lets one finish that has written already, so consumers can still drain (and
  -- free memory) when it is full.
  redis.call('ZREM', DELAYED, unpack(ids))
  for _, id in ipairs(ids) do
    local j = load_job(id)
    if j then
      local set = j[F_CALLBACK] and READY_PUSH or READY
      redis.call('ZADD', set, ready_score(j[F_PRIORITY], run_at(j)), id)
    end
  end
  return #ids
end

local function opt(v)
  if v == nil then return false end
  return v
end

-- reply is a job as scripts return it: a flat array in the order the Go store parses.
local function reply(id, j)
  local state = j[F_STATE]
  if state == S_PENDING and run_at(j) <= NOW then state = 2 end
  return {
    id, state, j[F_FORMAT], j[F_PRIORITY], j[F_CREATED], run_at(j), j[F_ATTEMPTS],
    j[F_MAX_RETRIES], j[F_TTR], j[F_BODY], opt(j[F_BACKOFF]), opt(j[F_CALLBACK]),
    opt(j[F_LAST_ERROR]), opt(j[F_LEASE]), opt(j[F_LEASE_DEADLINE]), opt(j[F_DIED_AT]),
  }
end

-- owned returns the job when lease is its current, unexpired lease.
local function owned(id, lease)
  local j = load_job(id)
  if not j or j[F_STATE] ~= S_RESERVED or j[F_LEASE] ~= lease or j[F_LEASE_DEADLINE] < NOW then
    return nil
  end
  return j
end

local function split_numbers(s)
  if s == '' then return nil end
  local t = {}
  for n in string.gmatch(s, '[^,]+') do t[#t + 1] = tonumber(n) end
  return t
end

local function nonempty(s)
  if s == '' then return nil end
  return s
end
