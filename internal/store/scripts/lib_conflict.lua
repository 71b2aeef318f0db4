-- lib_conflict.lua: what an enqueue does with a job whose id exists, when the job asks to keep
-- or replace it (on_conflict). It comes after lib.lua in the prelude of "upsert", the enqueue
-- script that store sends a call holding such a job; the plain enqueue script lacks it, so that
-- its calls do not pay for defining these functions and the ones they use.

-- keep returns job id, which exists, as reply() makes it.
local function keep(id)
  return reply(id, redis.call('HGET', JOBS, id))
end

-- replace makes job id, delayed or ready, the one this call asks for (record rec, due at t, in
-- lane) in place: it keeps its creation time, attempts, snoozes and last error, and counts the
-- replace. Returns the job as reply() does, or nil and its state when it is reserved or dead.
local function replace(id, rec, t, lane)
  if redis.call('HEXISTS', LEASES, id) == 1 then return nil, S_RESERVED end
  if redis.call('ZSCORE', DEAD, id) then return nil, S_DEAD end
  local old = load_job(id)
  local j = pack_values(cmsgpack.unpack(rec))
  if j.n == F_SHORT_PRINT then -- the fingerprint moves to the end, after the replace's fields
    j[F_PRINT], j[F_SHORT_PRINT] = j[F_SHORT_PRINT], nil
  end
  local replaces = 0
  if old.n == F_PRINT then replaces = old[F_REPLACES] or 0 end
  j[F_CREATED], j[F_DELAY] = old[F_CREATED], t - old[F_CREATED]
  j[F_ATTEMPTS], j[F_LAST_ERROR], j[F_SNOOZES] = old[F_ATTEMPTS], old[F_LAST_ERROR], old[F_SNOOZES]
  j[F_REPLACES], j[F_REPLACED_AT] = replaces + 1, NOW
  redis.call('ZREM', READY, id)
  redis.call('ZREM', READY_PUSH, id)
  local prev = head_score()
  local saved = save(id, j)
  redis.call('ZADD', DELAYED, string.format('%d', t), id)
  notify_if_sooner(prev, t, lane)
  return reply(id, saved)
end
