-- reschedule.lua: move a delayed or ready job to a new due time.
-- KEYS: see lib.lua; KEYS[NKEYS + 1] is the record of the call that enqueued the job, if that
-- was a lone one (keep_call). ARGV[4] id; ARGV[5] 'delay' or 'at'; ARGV[6] ms.
-- Returns {1, job} when moved, {0} when the job is reserved or dead, {-1} when there is none.
local r = recorded()
if r == '' then return redis.error_reply(ABANDONED) end
if r then return cmsgpack.unpack(r) end
local id = ARGV[4]
local j = load_job(id)
if not j then return {-1} end
if not pending(id) then return {0} end
local t = tonumber(ARGV[6])
if ARGV[5] == 'delay' then t = NOW + t end
redis.call('ZREM', READY, id)
redis.call('ZREM', READY_PUSH, id)
local prev = head_score()
schedule(id, j, t)
keep_call(KEYS[NKEYS + 1], save(id, j))
notify_if_sooner(prev, t, lane_of(j))
local out = {1, reply(id, encode(j))}
record(out)
return out
