-- lib_controls.lua: the topic controls' part of the shared prelude, after lib.lua.
-- A topic's controls live in each of its partitions' SETTINGS hash (see lib.lua), so that a
-- reserve reads those of its own partition, in its own slot: a paused flag, and this
-- partition's shares of the topic's rate and concurrency limits. A missing hash or field is no
-- control.
--
-- The rate limit is a sliding window: STARTS holds the lease token of every delivery started
-- within the last period, scored by when it started; a reserve drops those older than the
-- period and starts no more than the share less what is left. So in no span of period ms do
-- more than the share start, after an idle spell too. The concurrency limit counts RESERVED.

-- PAUSED is the next moment a reserve or a look answers for a paused partition: nothing is
-- handed out, whatever is due, until a resume, whose notice wakes the consumers.
local PAUSED = -2

-- CONTROLS_CHANGED is the notice that tells the consumers waiting on a partition to look at it
-- again: its controls changed, and what they learned of it may no longer hold.
local CONTROLS_CHANGED = 'controls'

-- controls returns whether the partition is paused, its rate share and period in ms (nil
-- without a rate limit) and its concurrency share (nil without a concurrency limit).
local function controls()
  local s = redis.call('HMGET', SETTINGS, 'paused', 'rate_share', 'period_ms', 'concurrency_share')
  return s[1] == '1', tonumber(s[2]), tonumber(s[3]), tonumber(s[4])
end

-- allowed answers how many of max deliveries the controls let start now, after dropping the
-- starts older than the rate limit's period.
local function allowed(max, paused, rate, period, concurrency)
  if paused then return 0 end
  if rate then
    redis.call('ZREMRANGEBYSCORE', STARTS, '-inf', string.format('%d', NOW - period))
    max = math.min(max, rate - redis.call('ZCARD', STARTS))
  end
  if concurrency then
    max = math.min(max, concurrency - redis.call('ZCARD', RESERVED))
  end
  return math.max(max, 0)
end

-- opens answers when the limits next let a delivery start, nil when they let one start now:
-- for the rate, when enough starts leave the window; for the concurrency, at the first lease
-- deadline (a lease that expires frees its place; an ack, nack, release or cancel before it
-- announces itself, see announce_free).
local function opens(rate, period, concurrency)
  local t
  if rate then
    local used = redis.call('ZCARD', STARTS)
    if used >= rate then
      local s = redis.call('ZRANGE', STARTS, used - rate, used - rate, 'WITHSCORES')
      t = tonumber(s[2]) + period
    end
  end
  if concurrency and redis.call('ZCARD', RESERVED) >= concurrency then
    local h = redis.call('ZRANGE', RESERVED, '0', '0', 'WITHSCORES')
    local d = tonumber(h[2])
    if t == nil or d > t then t = d end
  end
  return t
end

-- next_due answers when a consumer of the lane whose ready set is set should next look at the
-- partition: NOW when due jobs wait, else its first delayed job, -1 when there is none; but not
-- before the limits let a delivery start, and PAUSED while paused. A lease deadline is not a
-- reason to look: the processes that keep the partition's leases expire it then (expiry.go),
-- and the job it puts back is announced as any job that comes due.
local function next_due(set, paused, rate, period, concurrency)
  if paused then return PAUSED end
  local t = -1
  if redis.call('ZCARD', set) > 0 then
    t = NOW
  else
    t = head_score() or -1
  end
  if t == -1 then return t end
  local o = opens(rate, period, concurrency)
  if o and o > t then t = o end
  return t
end

-- count_starts adds the deliveries started now to the rate window, when the topic has a rate
-- limit: leases is a list of pairs of job id and lease token, and each token is counted.
local function count_starts(rate, leases)
  if not rate or #leases == 0 then return end
  local starts = {}
  for i = 2, #leases, 2 do
    starts[#starts + 1] = NOW_S
    starts[#starts + 1] = leases[i]
  end
  bulk('ZADD', STARTS, starts)
end

-- announce_free tells the consumers waiting on the partition that n leases ended there, when
-- the partition was at its concurrency limit and due jobs wait: they were told to sleep until
-- the first lease deadline, and may take a job now.
local function announce_free(n)
  if n == 0 then return end
  local paused, _, _, concurrency = controls()
  if paused or not concurrency or redis.call('ZCARD', RESERVED) + n < concurrency then return end
  local due = head_score()
  local all = due and due <= NOW
  if all or redis.call('ZCARD', READY) > 0 then notify_if_sooner(nil, NOW, 'pull') end
  if all or redis.call('ZCARD', READY_PUSH) > 0 then notify_if_sooner(nil, NOW, 'push') end
end
