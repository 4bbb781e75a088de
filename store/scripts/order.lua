-- Included by commit.lua and publish.lua once nothing can refuse the
-- commit any more (deadline.lua's t is Redis's clock): the commit's place
-- in the spill order, its log entry's id, which Redis keeps increasing in
-- each stream even when its clock steps back, or for a commit without a
-- log entry, Redis's clock in the same form. A commit that spills is
-- recorded as the session's last ('-'): without a key, names matter only
-- where spills were written (a refusal's or a plan's entry alone changes
-- no spill). A keyed commit is recorded as its scope's, spills or not: the
-- key is held. The log entry carries the commit's name, so that a commit
-- whose reply was lost can be looked for (probe.lua).
local order
if ARGV[2] ~= '' then
  order = redis.call('XADD', KEYS[3], '*', 'entry', ARGV[2], 'commit', ARGV[3])
  if #ARGV > 4 then redis.call('HSET', KEYS[6], '-', ARGV[3]) end
  if ARGV[4] ~= '' then redis.call('HSET', KEYS[6], ARGV[4], ARGV[3]) end
else
  local us = tonumber(t[2])
  order = (tonumber(t[1]) * 1000 + math.floor(us / 1000)) .. '-' .. (us % 1000)
end
