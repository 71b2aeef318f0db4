-- nack.lua: a reserved job's attempt failed; retry it after a delay, or bury it.
-- KEYS: see lib.lua. ARGV[1] clock offset; ARGV[2] id; ARGV[3] lease; ARGV[4] error text;
-- ARGV[5] delay in ms ('' for the job's backoff step); ARGV[6] '1' to send it to the dead letters.
-- Returns 1 when it will be retried, 2 when it went dead, 0 when the lease is not current.
local id = ARGV[2]
if not owned(id, ARGV[3]) then return 0 end
local j = load_job(id)
if not j then return 0 end
local delay = nil
if ARGV[5] ~= '' then delay = tonumber(ARGV[5]) end
return fail(id, j, NOW, ARGV[4], delay, ARGV[6] == '1')
