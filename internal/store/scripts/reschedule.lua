-- reschedule.lua: move a delayed or ready job to a new due time.
-- KEYS: see lib.lua. ARGV[1] clock offset; ARGV[2] id; ARGV[3] 'delay' or 'at'; ARGV[4] ms.
-- Returns {1, job} when moved, {0} when the job is reserved or dead, {-1} when there is none.
local id = ARGV[2]
local j = load_job(id)
if not j then return {-1} end
if not pending(id) then return {0} end
local t = tonumber(ARGV[4])
if ARGV[3] == 'delay' then t = NOW + t end
redis.call('ZREM', READY, id)
redis.call('ZREM', READY_PUSH, id)
local prev = head_score()
schedule(id, j, t)
save(id, j)
notify_if_sooner(prev, t)
return {1, reply(id, encode(j))}
