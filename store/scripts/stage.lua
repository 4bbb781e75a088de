-- Stages one piece of a large commit (store/layout.h: Commits).
-- KEYS: the piece's key. ARGV: its expiry in ms (store_config's
-- stage_ttl_ms, by default LAYOUT_STAGE_TTL_MS), then for each spill
-- "t<field>", text, "m<field>", meta. Sets the piece to expire then. Safe
-- to send again.
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1 -- SCRIPT_STAGED
