-- beanstalkd_issue.lua: issue the ids of jobs the beanstalkd front end (cmd/delayq/internal/beanstalkd) is
-- about to put, one per topic given, consecutive and in the order given, and index them.
-- KEYS[1] ids      STRING the last id issued
-- KEYS[2] jobs     HASH   beanstalkd id -> job (see keys.Beanstalkd.Jobs)
-- KEYS[3] counts   HASH   counters (see keys.Beanstalkd.Counts): "t:<topic>:put" and "put"
--                         count puts
-- KEYS[4] call     STRING this call's outcome, for the replay window
-- ARGV[1] and ARGV[3] as in lib.lua (unused); ARGV[2] the replay window in ms (0 records
-- nothing); ARGV[4..] the topic of each job (its delayq id will be its id in fixed width).
-- Returns the first id; the others follow it.
local window = tonumber(ARGV[2])
if window > 0 then
  local r = redis.call('GET', KEYS[4])
  if r then return tonumber(r) end
end
local k = #ARGV - 3
local last = redis.call('INCRBY', KEYS[1], k)
local first = last - k + 1
local index, puts = {}, {}
for i = 4, #ARGV do
  index[#index + 1] = first + i - 4
  index[#index + 1] = ARGV[i]
  puts[ARGV[i]] = (puts[ARGV[i]] or 0) + 1
end
redis.call('HSET', KEYS[2], unpack(index))
for topic, n in pairs(puts) do
  redis.call('HINCRBY', KEYS[3], 't:' .. topic .. ':put', n)
end
redis.call('HINCRBY', KEYS[3], 'put', k)
if window > 0 then redis.call('SET', KEYS[4], first, 'PX', window) end
return first
