-- list.lua: page through the jobs of one state in a partition, in the order the state is served.
-- KEYS: see lib.lua.
-- ARGV[4] state: 'delayed', 'ready' or 'reserved'. ARGV[5..7] the position of the last job of
-- the previous page: segment, score, id ('' segment to start). ARGV[8] page size.
-- A position is (segment, score, id), compared in that order. Segments of 'ready': 0 for jobs
-- due but still in the delayed set (score: due time), 1 for the ready sets (score:
-- ready_score, that is priority, then due time). 'delayed' (score: due time) and 'reserved'
-- (score: lease deadline) have segment 0 only.
-- Returns up to the page size of {segment, score, id}, in position order: positions only, so
-- that a page over many partitions reads the records of the jobs it shows and no others.
local limit = tonumber(ARGV[8])
local after_seg, after_score, after_id = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]

-- from_source returns up to limit {segment, score, id} of src.set after the cursor whose scores
-- src.fits. Ties on the cursor's score are skipped from the cursor member's rank when it is still
-- there, else by reading past them a page at a time.
local function from_source(src)
  local seg, set, out = src.seg, src.set, {}
  local function take(flat)
    for i = 1, #flat, 2 do
      local s = tonumber(flat[i + 1])
      if s > src.hi_num then return true end
      local after = after_seg ~= seg or s > after_score or (s == after_score and flat[i] > after_id)
      if after and src.fits(s) then
        out[#out + 1] = {seg, flat[i + 1], flat[i]}
        if #out == limit then return true end
      end
    end
    return #flat < 2 * limit
  end
  if after_seg == nil or seg > after_seg then
    take(redis.call('ZRANGE', set, src.lo, src.hi, 'BYSCORE', 'LIMIT', 0, limit, 'WITHSCORES'))
    return out
  end
  if seg < after_seg then return out end
  local own = redis.call('ZSCORE', set, after_id)
  if own and tonumber(own) == after_score and src.fits(after_score) then
    local rank = redis.call('ZRANK', set, after_id)
    take(redis.call('ZRANGE', set, rank + 1, rank + limit, 'WITHSCORES'))
    return out
  end
  local from = src.lo
  if src.fits(after_score) then from = ARGV[6] end
  local offset = 0
  while true do
    local flat = redis.call('ZRANGE', set, from, src.hi, 'BYSCORE', 'LIMIT', offset, limit, 'WITHSCORES')
    if take(flat) then return out end
    offset = offset + limit
  end
end

local function any() return true end
local function after_now(s) return s > NOW end
local sources
if ARGV[4] == 'delayed' then
  sources = {{seg = 0, set = DELAYED, lo = '(' .. NOW, hi = '+inf', hi_num = math.huge, fits = after_now}}
elseif ARGV[4] == 'ready' then
  sources = {
    {seg = 0, set = DELAYED, lo = '-inf', hi = NOW, hi_num = NOW, fits = any},
    {seg = 1, set = READY, lo = '-inf', hi = '+inf', hi_num = math.huge, fits = any},
    {seg = 1, set = READY_PUSH, lo = '-inf', hi = '+inf', hi_num = math.huge, fits = any},
  }
else
  sources = {{seg = 0, set = RESERVED, lo = '-inf', hi = '+inf', hi_num = math.huge, fits = any}}
end
local found = {}
for _, src in ipairs(sources) do
  for _, e in ipairs(from_source(src)) do found[#found + 1] = e end
end
table.sort(found, function(a, b)
  if a[1] ~= b[1] then return a[1] < b[1] end
  local sa, sb = tonumber(a[2]), tonumber(b[2])
  if sa ~= sb then return sa < sb end
  return a[3] < b[3]
end)
local out = {}
for i = 1, math.min(#found, limit) do out[i] = found[i] end
return out
