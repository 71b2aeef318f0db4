-- ack.lua: reserved jobs are done; remove them.
-- KEYS: see lib.lua. ARGV[1] clock offset; then pairs of id, lease.
-- Returns ack_leases()'s value per pair.
return ack_leases(2)
