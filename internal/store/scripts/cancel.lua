-- cancel.lua: delete a job in any state; it is never handed out again, and its lease dies with it.
-- KEYS: see lib.lua; KEYS[NKEYS + 1] is the job's ended marker (mark_ended), KEYS[NKEYS + 2]
-- the record of the call that enqueued it, if that was a lone one (keep_call). ARGV[4] id.
-- Returns 1 when the job existed, or had been cancelled since (a cancel retried after a lost
-- answer), 0 when there was none; {outcome, at} when it ended otherwise: END_ACKED or END_DEAD
-- (dead, then deleted), and when. "Since" is within the replay window of its creation, or
-- within the job's unique_for of its end, while its marker says so.
-- A second run of a call that deleted the job answers as the first did, and deletes nothing:
-- the id may name a new job by now. So the record is read first.
local id = ARGV[4]
local r = recorded()
if r and r ~= '' then return cmsgpack.unpack(r) end
local ENDED = KEYS[NKEYS + 1]
local rec = redis.call('HGET', JOBS, id)
if redis.call('HDEL', JOBS, id) == 0 then
  local outcome, at, created, _, taken = ended_by(ENDED)
  -- The marker expires by Redis's own clock; a clock offset (tests) moves NOW.
  if not outcome or (NOW - created > WINDOW and not taken) then return 0 end
  if outcome == END_CANCELLED then return 1 end
  return {outcome, at}
end
redis.call('ZREM', DELAYED, id)
redis.call('ZREM', READY, id)
redis.call('ZREM', READY_PUSH, id)
redis.call('ZREM', RESERVED, id)
local leased = redis.call('HDEL', LEASES, id)
if rec and ARCHIVE ~= 0 then archive('cancelled', id, rec, attempts_of(rec) + leased) end
redis.call('ZREM', DEAD, id)
mark_ended(ENDED, END_CANCELLED, rec, true)
keep_call(KEYS[NKEYS + 2], rec)
announce_free(leased)
record(1)
return 1
