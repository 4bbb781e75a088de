-- Included by commit.lua and publish.lua after the deadline: KEYS[6] is the
-- commits hash, ARGV[2] the log entry, ARGV[3] the commit's name, ARGV[4]
-- its scope (the name's first 8 digits when they name an Idempotency-Key,
-- else empty).
--
-- A commit whose name is the session's last commit's ('-' in the commits
-- hash), or the last one's under its Idempotency-Key (its scope's field),
-- ran already: this one may be its retry (retry is set). One whose scope
-- names a commit with other content reuses the key for another body, and
-- writes nothing. A hash field, not the log: reading the last log entry
-- would copy all of it, which can be megabytes, into the script, and a key
-- is held across later commits.
local retry = false
if ARGV[2] ~= '' and ARGV[3] ~= '' then
  local held = redis.call('HGET', KEYS[6], ARGV[4] ~= '' and ARGV[4] or '-')
  if ARGV[4] ~= '' and held and held ~= ARGV[3] then return -4 end -- SCRIPT_KEY_REUSED
  retry = held == ARGV[3]
end
