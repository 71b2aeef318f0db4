-- beanstalkd_alias.lua: give a job enqueued elsewhere (over HTTP, say) a beanstalkd id when a
-- beanstalkd client first meets it, or answer the one it has.
-- KEYS[1] ids      STRING the last id issued
-- KEYS[2] jobs     HASH   beanstalkd id -> job (see keys.Beanstalkd.Jobs)
-- KEYS[3] aliases  HASH   "<topic>\0<delayq id>" -> beanstalkd id
-- ARGV[1..3] as in lib.lua (unused); ARGV[4] "<topic>\0<delayq id>".
-- Returns the id. A replay answers the same: the first run stored it.
local job = ARGV[4]
local n = redis.call('HGET', KEYS[3], job)
if n then return tonumber(n) end
n = redis.call('INCR', KEYS[1])
redis.call('HSET', KEYS[2], n, job)
redis.call('HSET', KEYS[3], job, n)
return n
