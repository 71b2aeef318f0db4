-- beanstalkd_unpause.lua: forget a tube's pause that has ended, unless a later pause-tube has
-- replaced it.
-- KEYS[1] pauses HASH topic -> "<until ms> <length s>" (see keys.Beanstalkd.Pauses)
-- ARGV[1..3] as in lib.lua (unused); ARGV[4] the topic; ARGV[5] the until of the pause that
-- ended. Returns 1 when it forgot it, 0 otherwise. A replay does nothing more.
local v = redis.call('HGET', KEYS[1], ARGV[4])
if not v or string.match(v, '^%d+') ~= ARGV[5] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[4])
return 1
