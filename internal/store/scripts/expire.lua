-- expire.lua: fail the partition's leases whose deadline has passed, at most ARGV[4] of them,
-- as a reserve does first: a job whose lease expired is due again after its backoff (counted
-- from the deadline), or dead when its retries are used up. It records nothing: what it
-- changes is what any later call would change first, so running it twice is running it once.
-- A partition that was at its concurrency limit wakes its waiting consumers, as an ack does:
-- they were told to sleep until the first lease deadline they knew, which a touch or a
-- reserve-job may have made earlier since.
-- KEYS: see lib.lua. ARGV[4] bulk limit.
-- Returns {now, next, expired}: next is the first lease deadline left (now when the limit left
-- some expired ones, -1 when nothing is leased), expired how many leases this call expired.
local limit = tonumber(ARGV[4])
local n = expire_leases(limit)
announce_free(n)
local next = lease_head() or -1
if n >= limit then next = NOW end
return {NOW, next, n}
