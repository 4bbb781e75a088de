#!lua flags=no-writes
-- A read that must not see a commit half merged: KEYS: pending, then the
-- key read; ARGV: the command, then its arguments after the key. Answers
-- SCRIPT_PENDING while a commit is pending (no read it runs answers an
-- integer), else the command's reply. At most LAYOUT_READ_ARGS_MAX ARGV
-- (Lua's unpack).
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end -- SCRIPT_PENDING
return redis.call(ARGV[1], KEYS[2], unpack(ARGV, 2))
