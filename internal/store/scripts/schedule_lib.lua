-- schedule_lib.lua: shared prelude of the schedule scripts (schedule_*.lua), prepended to each
-- when it is loaded, as lib.lua is to the partition scripts. A schedule script changes one
-- schedule in its own hash slot; enqueueing a tick's job is tick.lua's, in the job's partition.
--
-- KEYS[1] state  HASH  the schedule (internal/keys Schedule.State):
--   def      its definition: JSON that the Go package writes and reads; scripts never look in it
--   created  Unix ms when it was made: its identity, which a delete and a new put change
--   updated  Unix ms of the last put
--   paused   '1' while paused, '0' otherwise
--   cursor   Unix ms: every tick up to it has been enqueued or passed over (a missed tick
--            under the skip policy, the ticks of a pause)
--   last     Unix ms of the latest tick whose job was enqueued; absent before the first
--   horizon  Unix ms: no look that read the schedule enqueues a tick after it. Each look raises
--            it to the time it read the schedule plus its look-ahead, in the script that
--            answers the read (schedule_look.lua, and schedule_put.lua and schedule_pause.lua
--            for the look of a put or a resume), so it covers the looks still under way
--   topic    the topic of the definition, where its ticks' jobs and marks go
--   skipped  how many ticks found their job id taken by another job, so enqueued nothing
--   floor    Unix ms, for a schedule put over a tombstone: the ticks up to it are the deleted
--            schedule's; absent otherwise
-- Once deleted, the hash is a tombstone until no look of the deleted schedule can enqueue a
-- tick any more (schedule_delete.lua): floor, the latest tick it dealt with or may still
-- enqueue, and created, its identity. A schedule put again under the name ticks after floor,
-- and gets a later identity.
-- KEYS[2] call   STRING this call's recorded outcome (scripts that change state only)
-- ARGV[1], ARGV[2] and ARGV[3] are the clock offset, the replay window and the archive setting,
-- as in lib.lua (schedules archive nothing); a script's own arguments start at ARGV[4].

local STATE, CALL, WINDOW = KEYS[1], KEYS[2], tonumber(ARGV[2])

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
end

local NOW = now_ms()

-- recorded returns the values this call recorded on its first run as a table, or nil on the
-- first run.
local function recorded()
  if not CALL or WINDOW == 0 then return nil end
  local r = redis.call('GET', CALL)
  if not r then return nil end
  return {cmsgpack.unpack(r)}
end

-- record keeps this call's outcome, the values of table t, for the replay window. A script
-- calls it after its first write: over maxmemory Redis refuses a script whose first write may
-- grow memory.
local function record(t)
  if CALL and WINDOW > 0 then
    redis.call('SET', CALL, cmsgpack.pack(unpack(t)), 'PX', WINDOW)
  end
end

-- state returns the schedule as the scripts answer it, in the order the Go store parses:
-- {def, created, updated, paused (1 or 0), cursor, last (0 before the first tick), now,
-- skipped, floor (0 when none)}; nil when there is no schedule (a tombstone is none).
local function state()
  local v = redis.call('HMGET', STATE, 'def', 'created', 'updated', 'paused', 'cursor', 'last', 'skipped', 'floor')
  if not v[1] then return nil end
  local paused = 0
  if v[4] == '1' then paused = 1 end
  return {v[1], tonumber(v[2]), tonumber(v[3]), paused, tonumber(v[5]), tonumber(v[6] or 0), NOW,
    tonumber(v[7] or 0), tonumber(v[8] or 0)}
end

-- raise_horizon records that a look which read the schedule now may enqueue its ticks up to
-- ahead ms from now. A paused schedule's look enqueues nothing.
local function raise_horizon(ahead)
  if redis.call('HGET', STATE, 'paused') == '1' then return end
  local h = NOW + ahead
  if h > tonumber(redis.call('HGET', STATE, 'horizon') or 0) then
    redis.call('HSET', STATE, 'horizon', h)
  end
end
