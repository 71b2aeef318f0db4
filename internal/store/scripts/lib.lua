-- lib.lua: shared prelude, prepended to every delayq script when it is loaded.
--
-- KEYS (built by internal/keys, all in one partition's hash slot; see below for which a script
-- is given):
--   KEYS[1] jobs       HASH  job id -> job record
--   KEYS[2] delayed    ZSET  job id, score = due time (Unix ms)
--   KEYS[3] ready      ZSET  due pull jobs, score = ready_score(priority, due time)
--   KEYS[4] ready:push ZSET  due jobs with a callback URL, same scores
--   KEYS[5] reserved   ZSET  leased job ids, score = lease deadline (Unix ms)
--   KEYS[6] dead       ZSET  dead job ids, score 0 (paged by id)
--   KEYS[7] notify     shard channel: '<due time>' or '<due time> push' when a lane's job
--                      becomes due earlier than anything the partition had; '<deadline> lease'
--                      when a lease ends before any other of the partition
--   KEYS[8] leases     HASH  leased job id -> lease token
--   KEYS[9] settings   HASH  the topic's controls in this partition: paused, rate_share,
--                      period_ms, concurrency_share (and the topic's rate and concurrency,
--                      for display); a missing field is no limit
--   KEYS[10] starts    ZSET  the lease tokens of the deliveries started within the rate
--                      limit's period, score = when each started (Unix ms)
--   KEYS[11] history   STREAM the outcomes of the partition's jobs (acked, dead, cancelled...)
--                      waiting to be archived, while archiving is on (ARGV[3])
--   KEYS[12] call      STRING this call's recorded outcome (scripts that change state only)
-- A script that ends jobs named in its call (ack, reserve's acks, cancel, dead_delete by id)
-- is given the ended marker (Partition.Ended, STRING) of each job that may leave one after its
-- own keys (an ack, of each marked lease: see held); its header says where (see mark_ended).
-- ARGV[1] is always a clock offset in ms added to the server's TIME: 0 in production, set by tests
-- to move time forward. The Redis server's clock decides every due time; a client's clock never does.
-- ARGV[2] is always the replay window in ms: a script that changed something records its outcome
-- under CALL for that long, and a second run of the same call (a Redis client re-sending it
-- after a lost reply, or the caller retrying) answers that outcome instead of acting again.
-- 0 records nothing.
-- ARGV[3] is always the archive setting: 0 when job outcomes are not archived, else the most
-- outcomes the history stream keeps waiting for the archiver (positive: jobs' ends only;
-- negative: failed attempts too). A script's own arguments start at ARGV[4].
--
-- A job record is a run of MessagePack values in the order of F below; trailing nils are left
-- out. The fields the hot paths read come first, so promote and reserve read them with
-- cmsgpack.unpack_limit without unpacking the body, and a lease lives outside the record (the
-- leases hash and the reserved set), so that taking and acking a job never rewrites it. The Go
-- store encodes a new job's record itself; enqueue only adds the server's time.
-- A job's state is where its id is: leased (reserved), in the dead set (dead), or else pending.

-- A script is given only the keys it names, in this order, numbered from 1 (scripts.go numbers
-- them when it assembles the script, and the Go store passes just those): a key costs Redis
-- about 1,400 instructions a call, whether the script touches it or not. Keys a call adds after
-- them (ended markers, per-lease records) start at KEYS[NKEYS + 1]: NKEYS is the count of the
-- script's own, put in place of the name like a constant.
local JOBS = KEYS[1]
local DELAYED = KEYS[2]
local READY = KEYS[3]
local READY_PUSH = KEYS[4]
local RESERVED = KEYS[5]
local DEAD = KEYS[6]
local NOTIFY = KEYS[7]
local LEASES = KEYS[8]
local SETTINGS = KEYS[9]
local STARTS = KEYS[10]
local HISTORY = KEYS[11]
local CALL = KEYS[12]
local WINDOW = tonumber(ARGV[2])
local ARCHIVE = tonumber(ARGV[3])

-- Record fields, by position. Plain locals rather than tables: a script builds its prelude on
-- every call, and tables made per call cost garbage collection. A local defined as a literal
-- (or arithmetic of them) is a constant: scripts.go puts its value in place of its name, so it
-- may never be declared again nor assigned to.
local F_PRIORITY, F_CALLBACK, F_TTR, F_ATTEMPTS, F_CREATED, F_DELAY = 1, 2, 3, 4, 5, 6
local F_FORMAT, F_MAX_RETRIES, F_BODY, F_BACKOFF, F_LAST_ERROR, F_DIED_AT = 7, 8, 9, 10, 11, 12
-- F_HEADERS is a map of header name to value, absent when the job has none (never an empty
-- table, which cmsgpack would pack as an array). cmsgpack unpacks it into a table with string
-- keys and packs that back as a map, so scripts that rewrite a record keep it as it was.
local F_HEADERS = 13
-- F_SNOOZES counts the releases that put the job back for later (release.lua), F_MAX_SNOOZES is
-- the most it may take before it goes dead; both absent in records written before them, and
-- in a new job's record (0, and no limit), so they cost a job that never snoozes nothing.
local F_SNOOZES, F_MAX_SNOOZES = 14, 15
-- F_UNIQUE_FOR is how long the job's id stays taken once it ends (ms: its ended marker's life,
-- mark_ended); F_REPLACES counts the enqueues that replaced it (on_conflict replace) and
-- F_REPLACED_AT is when the last one did. All absent unless used.
local F_UNIQUE_FOR, F_REPLACES, F_REPLACED_AT = 16, 17, 18
-- F_PRINT is the fingerprint of what the enqueue asked (store.Fingerprint, PRINT_LEN bytes),
-- present only for jobs enqueued with an id of the caller's, and then always the last field:
-- at F_PRINT, or at F_SHORT_PRINT when none of the three fields above is set (and in
-- records written before they existed). So a record of more than F_MAX_SNOOZES fields ends
-- with its fingerprint.
local F_PRINT, F_SHORT_PRINT = 19, 16
local NFIELDS = 19
local PRINT_LEN = 12
local PRINT_TAG = 0xa0 + PRINT_LEN -- MessagePack's fixstr of PRINT_LEN bytes
-- MARKS ends the lease token of a job whose end may leave a marker (see held).
local MARKS = 43 -- '+'

-- The ends of a job an ended marker tells (mark_ended); the Go store names them (endOutcome).
local END_ACKED, END_DEAD, END_CANCELLED = 1, 2, 3

-- States as replies report them; the Go store's State constants match.
local S_DELAYED, S_READY, S_RESERVED, S_DEAD = 1, 2, 3, 4

-- default_backoff is the backoff of a job that names none; the Go package's DefaultBackoff
-- must match it.
local function default_backoff()
  return {15000, 180000, 600000, 1800000, 3600000, 7200000, 21600000, 54000000}
end

-- ready_score orders due jobs by priority (higher first), then due time. Priorities are within
-- +-1000 and due times below 2^43 ms, so every score is an exact double.
-- A stored priority of RANK_BASE or more is RANK_BASE plus a beanstalkd priority (0 to 2^32-1,
-- most urgent first; cmd/delayq/internal/beanstalkd): the job is scored by that priority alone, so that
-- jobs of equal priority rank by member (their fixed-width ids), as beanstalkd orders them. Such
-- scores lie below RANK_SPAN, before every priority-0 job (whose scores are due times) and
-- after every job of a higher priority.
local PRIORITY_UNIT = 8796093022208 -- 2^43
local RANK_BASE, RANK_SPAN = 1099511627776, 4294967296 -- 2^40, 2^32

local function ready_score(priority, run_at)
  if priority >= RANK_BASE then return priority - RANK_BASE end
  return -priority * PRIORITY_UNIT + run_at
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
end

local NOW = now_ms()
-- Numbers given to redis.call are written out by Redis 7.0 with "%.17g", a few thousand
-- instructions each; integers written as strings here cost a tenth of that, so the scripts
-- pass strings: NOW_S, '0', and string.format('%d', n).
local NOW_S = string.format('%d', NOW)

-- recorded returns what this call recorded on its first run: nil on the first run, '' when the
-- call was abandoned before it ran (see abandon.lua), else the values record() packed.
local function recorded()
  if not CALL or WINDOW == 0 then return nil end
  local r = redis.call('GET', CALL)
  if not r then return nil end
  return r
end

-- record keeps this call's outcome for the replay window. A script calls it after its first
-- write: over maxmemory Redis refuses a script whose first write may grow memory.
local function record(...)
  if CALL and WINDOW > 0 then
    redis.call('SET', CALL, cmsgpack.pack(...), 'PX', ARGV[2])
  end
end

-- ABANDONED is the error a replay of an abandoned call answers; nobody reads it.
local ABANDONED = 'ABANDONED this call was abandoned before it ran'

-- bulk runs cmd on key with the values of list, 2000 at a time: unpack takes a few thousand
-- values at most. Pairs (score and member, field and value) stay together.
local function bulk(cmd, key, list)
  for i = 1, #list, 2000 do
    redis.call(cmd, key, unpack(list, i, math.min(i + 1999, #list)))
  end
end

local function pack_values(...)
  return {n = select('#', ...), ...}
end

local function encode(j)
  local n = NFIELDS
  while n > 0 and j[n] == nil do n = n - 1 end
  return cmsgpack.pack(unpack(j, 1, n))
end

local function load_job(id)
  local rec = redis.call('HGET', JOBS, id)
  if not rec then return nil end
  return pack_values(cmsgpack.unpack(rec))
end

-- save stores job id's record j and returns it encoded.
local function save(id, j)
  local rec = encode(j)
  redis.call('HSET', JOBS, id, rec)
  return rec
end

-- archive appends the outcome of job id ('acked', 'dead', 'cancelled', 'dead_deleted', or
-- 'failed' for an attempt that will be retried) to the partition's history stream, when
-- archiving is on (ARGV[3]): rec is its record then, and attempts the deliveries it had had.
-- Failed attempts only when the setting asks for them. Past the setting's bound the oldest
-- outcome waiting is dropped, and counted in the partition's settings (history_dropped):
-- archiving never blocks the queue.
-- at is when the outcome happened (Unix ms), NOW when nil.
local function archive(outcome, id, rec, attempts, at)
  if ARCHIVE == 0 or (outcome == 'failed' and ARCHIVE > 0) then return end
  local keep = math.abs(ARCHIVE)
  local waiting = redis.call('XLEN', HISTORY)
  if waiting == 0 and redis.call('EXISTS', HISTORY) == 0 then
    -- The archivers' group (store.HistoryGroup) comes with the stream: over maxmemory Redis
    -- refuses XGROUP CREATE from an archiver, which could then never read it. Here it is
    -- allowed, as this script has written already.
    redis.call('XGROUP', 'CREATE', HISTORY, 'archivers', '0', 'MKSTREAM')
  end
  if waiting >= keep then
    redis.call('HINCRBY', SETTINGS, 'history_dropped', 1)
  end
  redis.call('XADD', HISTORY, 'MAXLEN', string.format('%d', keep), '*', 'o', outcome, 'i', id, 'r', rec,
    'a', string.format('%d', attempts), 't', at and string.format('%d', at) or NOW_S)
end

-- mark_ended keeps under key (the job's Partition.Ended, from KEYS) what became of a job whose
-- record rec goes now (outcome, an END_ value): until the replay window of the job's creation
-- closes, an identical enqueue retried answers the first one's job instead of adding it again
-- (enqueue.lua) and a retried cancel learns what became of it (cancel.lua); for the job's
-- F_UNIQUE_FOR from now, its id stays taken (an enqueue of it answers already_done, and a read
-- the marker). Only a job whose record holds a fingerprint gets one (or any job, when bare is
-- true: a cancel, rare enough to tell every retried cancel what it did), and only while
-- either of the two lasts. The marker is the outcome, its time, the job's creation time, its
-- fingerprint ('' for none) and its unique_for (0 for none): about 30 bytes and no body. It
-- writes: a script calls it after its first write (see record).
local function mark_ended(key, outcome, rec, bare)
  if not key or not rec then return end
  -- A record whose end is not a fixstr of PRINT_LEN bytes holds no fingerprint; one whose end
  -- is may still end in a body or header of that length, so it is unpacked to be sure.
  local tagged = string.byte(rec, -PRINT_LEN - 1) == PRINT_TAG
  if not tagged and not bare then return end
  local _, _, _, _, _, created = cmsgpack.unpack_limit(rec, F_CREATED)
  local print, unique = '', 0
  if tagged then
    local j = pack_values(cmsgpack.unpack(rec))
    if j.n > F_MAX_SNOOZES then print = j[j.n] end
    if j.n == F_PRINT then
      unique = j[F_UNIQUE_FOR] or 0
      -- A replaced job's fingerprint is the replace's, which a retry of it counts from.
      created = j[F_REPLACED_AT] or created
    end
  end
  if print == '' and not bare then return end
  local left = unique
  if WINDOW > 0 then left = math.max(left, created + WINDOW - NOW) end
  if left <= 0 then return end
  redis.call('SET', key, cmsgpack.pack(outcome, NOW, created, print, unique), 'PX', string.format('%d', left))
end

-- keep_call keeps under key (the Partition.Call of the job's id) the record of the call that
-- made job id, when that was a lone enqueue of a job whose id it made (its call id is the
-- job's: enqueue.lua), which records nothing when the job cannot be delivered within the
-- replay window: now that the job is moved or ends before that, a retry of that enqueue
-- answers as its first run did instead of adding the job again. The record is what the
-- enqueue would have kept. Only for a job without a fingerprint (one with a fingerprint is told
-- by its ended marker), until the window of its creation closes, and never over a record the
-- enqueue kept itself; a job made otherwise gets a record nobody reads, gone with the window.
-- rec is the job's record. It writes: a script calls it after its first write (see record).
local function keep_call(key, rec)
  if not key or not rec or WINDOW == 0 then return end
  local _, _, _, _, _, created = cmsgpack.unpack_limit(rec, F_CREATED)
  local left = created + WINDOW - NOW
  if left <= 0 then return end
  -- A record whose end looks like a fingerprint's may end in a body of that length.
  if string.byte(rec, -PRINT_LEN - 1) == PRINT_TAG and select('#', cmsgpack.unpack(rec)) > F_MAX_SNOOZES then
    return
  end
  redis.call('SET', key, cmsgpack.pack(created, {}, {}), 'PX', string.format('%d', left), 'NX')
end

-- ended_by reads the ended marker under key: its outcome, end time, the job's creation time,
-- fingerprint, and whether it keeps the id taken still (its unique_for has not passed since
-- the end; see mark_ended), or nil when there is none.
local function ended_by(key)
  local m = key and redis.call('GET', key)
  if not m then return nil end
  local outcome, at, created, print, unique = cmsgpack.unpack(m)
  return outcome, at, created, print, NOW - at < (unique or 0)
end

-- attempts_of returns the finished attempts a stored record counts.
local function attempts_of(rec)
  local _, _, _, _, attempts = cmsgpack.unpack_limit(rec, F_ATTEMPTS)
  return attempts
end

local function head_score()
  local h = redis.call('ZRANGE', DELAYED, '0', '0', 'WITHSCORES')
  if #h == 0 then return nil end
  return tonumber(h[2])
end

-- notify_if_sooner tells the waiting consumers of a lane ('pull' or 'push') about a due time
-- earlier than the partition's earliest before the change (prev, nil when the partition had
-- none). Each lane's consumers hear only of their own jobs.
local function notify_if_sooner(prev, t, lane)
  if t and (prev == nil or t < prev) then
    local msg = string.format('%.0f', t)
    if lane == 'push' then msg = msg .. ' push' end
    redis.call('SPUBLISH', NOTIFY, msg)
  end
end

-- lease_head returns the partition's first lease deadline, nil when nothing is leased.
local function lease_head()
  local h = redis.call('ZRANGE', RESERVED, '0', '0', 'WITHSCORES')
  if #h == 0 then return nil end
  return tonumber(h[2])
end

-- announce_lease tells the processes that expire leases (internal/wake's Leases) about a lease
-- deadline earlier than the partition's first before the change (prev, nil when none): they
-- sleep until the first deadline they know of, and expire it then, whoever consumes the topic.
local function announce_lease(prev, deadline)
  if prev == nil or deadline < prev then
    redis.call('SPUBLISH', NOTIFY, string.format('%.0f lease', deadline))
  end
end

-- lane_of returns the lane of a job: 'push' when it has a callback URL.
local function lane_of(j)
  if j[F_CALLBACK] then return 'push' end
  return 'pull'
end

local function schedule(id, j, t)
  j[F_DELAY] = t - j[F_CREATED]
  redis.call('ZADD', DELAYED, string.format('%d', t), id)
end

local function bury(id, j, at)
  j[F_DIED_AT] = at
  redis.call('ZADD', DEAD, '0', id)
end

local function backoff_for(j, retry)
  local steps = j[F_BACKOFF] or default_backoff()
  if retry > #steps then retry = #steps end
  return steps[retry]
end

-- fail ends a reserved job's attempt, which ended at time since, and counts it: the job goes
-- dead when its retries are used up or when dead is true, else it is due again delay (or its
-- backoff step when delay is nil) after since. Returns 2 when the job went dead, 1 when it will
-- be retried.
local function fail(id, j, since, err, delay, dead)
  redis.call('ZREM', RESERVED, id)
  redis.call('HDEL', LEASES, id)
  j[F_ATTEMPTS] = j[F_ATTEMPTS] + 1
  j[F_LAST_ERROR] = err
  local outcome
  if dead or j[F_ATTEMPTS] > j[F_MAX_RETRIES] then
    bury(id, j, since)
    outcome = 2
  else
    local prev = head_score()
    local t = since + (delay or backoff_for(j, j[F_ATTEMPTS]))
    schedule(id, j, t)
    notify_if_sooner(prev, t, lane_of(j))
    outcome = 1
  end
  local rec = save(id, j)
  archive(outcome == 2 and 'dead' or 'failed', id, rec, j[F_ATTEMPTS], since)
  return outcome
end

-- expire_leases fails up to limit jobs whose lease deadline has passed; their backoff counts
-- from the deadline, not from when this call noticed it, and so does their history. Each
-- expiry counts in the partition's settings (leases_expired). Returns how many it expired.
local function expire_leases(limit)
  local expired = redis.call('ZRANGE', RESERVED, '-inf', NOW_S, 'BYSCORE', 'LIMIT', '0', string.format('%d', limit), 'WITHSCORES')
  if #expired == 0 then return 0 end
  for i = 1, #expired, 2 do
    local id = expired[i]
    local j = load_job(id)
    if j then
      fail(id, j, tonumber(expired[i + 1]), 'ttr exceeded', nil, false)
    else
      redis.call('ZREM', RESERVED, id)
      redis.call('HDEL', LEASES, id)
    end
  end
  redis.call('HINCRBY', SETTINGS, 'leases_expired', string.format('%d', #expired / 2))
  return #expired / 2
end

-- promote moves up to limit due jobs from delayed to their ready set. It reads only the first
-- two fields of each record; the due time is the delayed set's score.
local function promote(limit)
  local due = redis.call('ZRANGE', DELAYED, '-inf', NOW_S, 'BYSCORE', 'LIMIT', '0', string.format('%d', limit), 'WITHSCORES')
  if #due == 0 then return end
  local ids = {}
  for i = 1, #due, 2 do ids[#ids + 1] = due[i] end
  -- Remove first: over maxmemory Redis refuses a script whose first write may grow memory
  -- (ZADD) but lets one finish that has written already, so consumers can still drain (and
  -- free memory) when it is full.
  bulk('ZREM', DELAYED, ids)
  local pull, push = {}, {}
  for i = 1, #due, 2 do
    local rec = redis.call('HGET', JOBS, due[i])
    if rec then
      local _, priority, callback = cmsgpack.unpack_limit(rec, 2)
      local set = pull
      if callback then set = push end
      set[#set + 1] = string.format('%d', ready_score(priority, tonumber(due[i + 1])))
      set[#set + 1] = due[i]
    end
  end
  bulk('ZADD', READY, pull)
  bulk('ZADD', READY_PUSH, push)
end

-- reply is a job as scripts return it, in the order the Go store parses: the id, the record as
-- stored, the state, and the lease token and deadline (false when not reserved).
local function reply(id, rec)
  local lease = redis.call('HGET', LEASES, id)
  if lease then
    return {id, rec, S_RESERVED, lease, tonumber(redis.call('ZSCORE', RESERVED, id))}
  end
  local state = S_READY
  if redis.call('ZSCORE', DEAD, id) then
    state = S_DEAD
  else
    local due = redis.call('ZSCORE', DELAYED, id)
    if due and tonumber(due) > NOW then state = S_DELAYED end
  end
  return {id, rec, state, false, false}
end

-- lease_token returns the lease a reserve call with the secret prefix gives job id: each job of
-- a call gets its own token, and one job's token tells nothing of another's.
local function lease_token(prefix, id)
  return string.sub(redis.sha1hex(prefix .. '/' .. id), 1, 24)
end

-- held returns the lease token of a job whose record is rec, made of token: token, and '+'
-- (MARKS) after it when the record may hold a fingerprint, whose end leaves a marker
-- (mark_ended). The leases hash keeps it and the job's consumer is given it, so the ack of a
-- job that cannot leave one is given no marker's key and reads no record (ack_leases).
local function held(token, rec)
  if string.byte(rec, -PRINT_LEN - 1) == PRINT_TAG then return token .. '+' end
  return token
end

-- unlease puts a leased job back in its ready set as if it had never been leased: the attempt
-- does not count and it keeps its place among the due jobs. rec is its record.
local function unlease(id, rec)
  redis.call('ZREM', RESERVED, id)
  redis.call('HDEL', LEASES, id)
  local _, priority, callback, _, _, created, delay = cmsgpack.unpack_limit(rec, 6)
  local set = READY
  if callback then set = READY_PUSH end
  redis.call('ZADD', set, string.format('%d', ready_score(priority, created + delay)), id)
end

-- owned tells whether lease is the job's current, unexpired lease.
local function owned(id, lease)
  if redis.call('HGET', LEASES, id) ~= lease then return false end
  local deadline = redis.call('ZSCORE', RESERVED, id)
  return deadline and tonumber(deadline) >= NOW
end

-- pending tells whether the job is neither reserved nor dead.
local function pending(id)
  return redis.call('HEXISTS', LEASES, id) == 0 and not redis.call('ZSCORE', DEAD, id)
end

-- ack_leases acks the (id, lease) pairs of ARGV from position first on. ended, when given, is
-- the position in KEYS of the ended marker (mark_ended) of the first pair whose lease is marked
-- (held), those of the other such pairs following in order; the job of an unmarked lease
-- leaves none. Records are read only when archiving or marking.
-- Returns one value per pair: 1 when acked, 0 when the lease is not the job's current, unexpired
-- one (the job is then left as it is).
local function ack_leases(first, ended)
  local out, done, markers = {}, {}, ended and {}
  for i = first, #ARGV - 1, 2 do
    local id, lease = ARGV[i], ARGV[i + 1]
    local marker = false
    if ended and string.byte(lease, -1) == MARKS then
      marker = KEYS[ended]
      ended = ended + 1
    end
    if not done[id] and owned(id, lease) then
      done[id] = true
      done[#done + 1] = id
      if markers then markers[#done] = marker end
      out[#out + 1] = 1
    else
      out[#out + 1] = 0
    end
  end
  -- The records are read before they go, and archived and marked after: over maxmemory Redis
  -- refuses a script whose first write may grow memory (XADD, SET), and acks must free memory
  -- then. Only the records of jobs whose end may leave a marker are read for it.
  local reads = ARCHIVE ~= 0 or markers
  local recs = {}
  if reads then
    for k, id in ipairs(done) do
      if ARCHIVE ~= 0 or markers[k] then recs[k] = redis.call('HGET', JOBS, id) end
    end
  end
  bulk('HDEL', JOBS, done)
  bulk('HDEL', LEASES, done)
  bulk('ZREM', RESERVED, done)
  if reads then
    for k = 1, #done do
      local rec = recs[k]
      if rec then
        if ARCHIVE ~= 0 then archive('acked', done[k], rec, attempts_of(rec) + 1) end
        if markers and markers[k] then mark_ended(markers[k], END_ACKED, rec) end
      end
    end
  end
  return out
end
