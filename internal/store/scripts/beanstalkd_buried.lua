-- beanstalkd_buried.lua: note the order in which a beanstalkd job was buried, for kick and
-- peek-buried, which take the buried jobs first buried first.
-- KEYS[1] counts HASH (see keys.Beanstalkd.Counts): "burials" counts burials, and the job's
--         "j:<id>:burial" field gets the count.
-- ARGV[1..3] as in lib.lua (unused); ARGV[4] the job's field.
redis.call('HSET', KEYS[1], ARGV[4], redis.call('HINCRBY', KEYS[1], 'burials', 1))
return 1
