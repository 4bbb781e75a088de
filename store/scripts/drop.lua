-- Removes a session: KEYS: text, meta, events, pending, commits. ARGV: the
-- stage prefix. The pending record is read and its pieces removed in the
-- same script as the session's keys, so that no commit can publish (and
-- keep its pieces past their expiry) between the read and the removal: a
-- commit racing it either lands whole after it or not at all. UNLINK: a
-- session of 100,000 spills would hold Redis for the whole free under DEL.
-- Returns how many of the five keys were removed.
local p = redis.call('GET', KEYS[4])
if p then
  local nonce, total = string.match(p, '^(%x+) %S+ (%d+) %d+$')
  for i = 0, (tonumber(total) or 0) - 1 do
    redis.call('UNLINK', ARGV[1] .. nonce .. ':' .. i)
  end
end
return redis.call('UNLINK', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
