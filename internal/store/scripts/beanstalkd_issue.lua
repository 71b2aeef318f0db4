-- beanstalkd_issue.lua: issue a beanstalkd job id (internal/beanstalkd) and index it.
-- KEYS[1] ids      STRING the last id issued
-- KEYS[2] jobs     HASH   beanstalkd id -> job (see keys.Beanstalkd.Jobs)
-- KEYS[3] aliases  HASH   "<topic>\0<delayq id>" -> beanstalkd id
-- KEYS[4] counts   HASH   counters (see keys.Beanstalkd.Counts): "t:<topic>:put" and "put" count puts
-- KEYS[5] call     STRING this call's outcome, for the replay window
-- ARGV[1] and ARGV[3] as in lib.lua (unused); ARGV[2] the replay window in ms (0 records
-- nothing); ARGV[4] the job: its topic for a job the
-- front end puts (its delayq id will be the new id in fixed width), or "<topic>\0<delayq id>"
-- for a job enqueued elsewhere, which keeps the alias it was given first.
-- Returns the id.
local window = tonumber(ARGV[2])
if window > 0 then
  local r = redis.call('GET', KEYS[5])
  if r then return tonumber(r) end
end
local job = ARGV[4]
local alias = string.find(job, '\0', 1, true)
if alias then
  local n = redis.call('HGET', KEYS[3], job)
  if n then return tonumber(n) end
end
local n = redis.call('INCR', KEYS[1])
redis.call('HSET', KEYS[2], n, job)
if alias then
  redis.call('HSET', KEYS[3], job, n)
else
  redis.call('HINCRBY', KEYS[4], 't:' .. job .. ':put', 1)
  redis.call('HINCRBY', KEYS[4], 'put', 1)
end
if window > 0 then redis.call('SET', KEYS[5], n, 'PX', window) end
return n
