-- Publishes a staged commit (store/layout.h: Commits).
-- KEYS and ARGV[1..4]: as commit.lua's; then ARGV: the pieces' key prefix
-- ("<stage><nonce>:"), their count, and how long the marker (KEYS[5])
-- lives, in ms (LAYOUT_STAGE_TTL_MS).
--
-- Checks the deadline as commit.lua does, and refuses while another commit
-- is pending and when a piece is missing (expired, or lost with a failed
-- master): nothing is written then. A retry of a commit logged already is
-- answered when every text its pieces hold is stored, and published again
-- when one vanished. Otherwise appends the log entry, keeps the pieces and
-- records the commit as pending ("<nonce> <order> <pieces> <left>"): from
-- then on it has happened, and merge.lua writes it. The codes are
-- store/layout.h's layout_script_code.
--#include deadline.lua
if redis.call('EXISTS', KEYS[4]) == 1 then return -1 end -- SCRIPT_PENDING
--#include retry.lua
local n = tonumber(ARGV[6])
for i = 0, n - 1 do
  if redis.call('EXISTS', ARGV[5] .. i) == 0 then return -2 end -- SCRIPT_PIECE_GONE
end
-- As for a small commit: a retry is answered only when every text its
-- pieces hold is stored; one that vanished is published again.
for i = 0, n - 1 do
  if not retry then break end
  for _, f in ipairs(redis.call('HKEYS', ARGV[5] .. i)) do
    if string.byte(f) == 116 and redis.call('HEXISTS', KEYS[1], string.sub(f, 2)) == 0 then
      retry = false
      break
    end
  end
end
if retry then return 2 end -- SCRIPT_ALREADY_WRITTEN
--#include order.lua
for i = 0, n - 1 do redis.call('PERSIST', ARGV[5] .. i) end
-- The pending record names the pieces by their staging nonce, the
-- prefix's last part; the log entry carries the commit's name.
local nonce = string.match(ARGV[5], '(%x+):$')
redis.call('SET', KEYS[4], nonce .. ' ' .. order .. ' ' .. n .. ' ' .. n)
redis.call('SET', KEYS[5], order, 'PX', ARGV[7])
return 1 -- SCRIPT_WRITTEN
