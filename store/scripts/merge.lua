-- Merges piece ARGV[2] (its key) of the pending commit ARGV[1] (its
-- staging nonce) as commit.lua writes a spill, then removes the piece; the
-- last one removes the pending record. KEYS: text, meta, pending. Does
-- nothing when that piece was merged already or another commit is pending.
local p = redis.call('GET', KEYS[3])
if not p then return 0 end -- SCRIPT_NOT_MERGED
local nonce, order, total, left = string.match(p, '^(%S+) (%S+) (%d+) (%d+)$')
if nonce ~= ARGV[1] or redis.call('EXISTS', ARGV[2]) == 0 then return 0 end -- SCRIPT_NOT_MERGED
--#include spill.lua
local kv = redis.call('HGETALL', ARGV[2])
-- Pieces are hashes: their fields come in no particular order. 't' (116)
-- marks a text, 'm' a meta value.
for i = 1, #kv, 2 do
  local f = string.sub(kv[i], 2)
  if string.byte(kv[i], 1) == 116 then
    write_text(f, kv[i + 1])
  else
    write_meta(f, kv[i + 1], order)
  end
end
redis.call('DEL', ARGV[2])
left = tonumber(left) - 1
if left == 0 then
  redis.call('DEL', KEYS[3])
else
  redis.call('SET', KEYS[3], nonce .. ' ' .. order .. ' ' .. total .. ' ' .. left)
end
return 1 -- SCRIPT_MERGED
