-- tick.lua: enqueue the job of one schedule's tick, unless this partition has had that tick or
-- a later one of the schedule.
-- KEYS: see lib.lua; KEYS[NKEYS + 1] ticks: HASH schedule name -> the latest tick (Unix ms) of the
-- schedule whose job was enqueued in this partition.
-- ARGV[4] the schedule's name, ARGV[5] the tick (Unix ms), then the job: ARGV[6] its id,
-- ARGV[7] its lane ('1' push, '0' pull), ARGV[8] and ARGV[9] the record's fields before
-- created at and after the delay (encoded by the caller, as for enqueue.lua); ARGV[10] the
-- latest time (Unix ms) the tick may be added at, '0' for any: when the scheduler read the
-- schedule, plus its look-ahead.
-- Returns {outcome, now}: outcome 1 when the job was added, due at the tick; 2 when a job
-- with the tick's id exists already (left as it is); 0 when the partition has had this tick or
-- a later one of the schedule, so nothing is added even when that tick's job is gone (done,
-- cancelled); 3 when the time is past ARGV[10]: the scheduler stalled since it read the
-- schedule, which may have been paused, changed or deleted meanwhile, so nothing is added or
-- marked and its next look decides afresh. The tick is marked on 1 and 2. A tick's job is always in the partition of its
-- id, so the mark decides every attempt at the tick, whichever scheduler makes it and however
-- late: a tick is enqueued once. A second run of the call answers what the first did.
local TICKS = KEYS[NKEYS + 1]
local name, tick, id = ARGV[4], tonumber(ARGV[5]), ARGV[6]
local again = recorded()
if again and again ~= '' then return {cmsgpack.unpack(again)} end
if ARGV[10] ~= '0' and NOW > tonumber(ARGV[10]) then return {3, NOW} end
local mark = redis.call('HGET', TICKS, name)
if mark and tonumber(mark) >= tick then return {0, NOW} end
local outcome = 2
local rec = ARGV[8] .. cmsgpack.pack(NOW, tick - NOW) .. ARGV[9]
if redis.call('HSETNX', JOBS, id, rec) == 1 then
  outcome = 1
  local prev = head_score()
  redis.call('ZADD', DELAYED, tick, id)
  local lane = 'pull'
  if ARGV[7] == '1' then lane = 'push' end
  notify_if_sooner(prev, tick, lane)
end
redis.call('HSET', TICKS, name, ARGV[5])
record(outcome, NOW)
return {outcome, NOW}
