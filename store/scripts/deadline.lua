-- Included first by every script that writes a commit (commit.lua,
-- publish.lua): Redis's clock, t, checked against the deadline ARGV[1]
-- (microseconds, Redis's time), past which the script writes nothing.
-- compactd stops waiting for the reply at the deadline, but the bytes are
-- already in Redis's socket buffer: a Redis stalled meanwhile (SIGSTOP, a
-- long fork, a paused VM) would run them when it wakes and store spills
-- nobody was told about.
local t = redis.call('TIME')
if tonumber(t[1]) * 1000000 + tonumber(t[2]) > tonumber(ARGV[1]) then return 0 end -- SCRIPT_TOO_LATE
