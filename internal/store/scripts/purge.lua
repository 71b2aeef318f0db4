-- purge.lua: delete a partition of a topic that is being deleted: with ARGV[4] 'purge', its
-- jobs, in any state, and its controls; with 'empty', its controls, and only when it holds no
-- job (else nothing).
-- KEYS: see lib.lua.
-- Returns the number of jobs the partition held (with 'empty' and a number above 0, it deleted
-- nothing). The keys are unlinked: Redis frees their memory in a background thread, so the
-- call takes well under a millisecond for a million jobs, where DEL would block Redis for
-- about a second (BenchmarkPurgeTopic).
-- Consumers waiting on the partition are told to look again (CONTROLS_CHANGED): its pause and
-- limits are gone. A second run of a call that deleted answers as the first did and deletes
-- nothing: the partition may hold new jobs by then.
local r = recorded()
if r and r ~= '' then return cmsgpack.unpack(r) end
local n = redis.call('HLEN', JOBS)
if n > 0 and ARGV[4] ~= 'purge' then return n end
redis.call('UNLINK', JOBS, DELAYED, READY, READY_PUSH, RESERVED, LEASES, DEAD, SETTINGS, STARTS)
redis.call('SPUBLISH', NOTIFY, CONTROLS_CHANGED)
record(n)
return n
