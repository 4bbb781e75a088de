-- One compaction's writes as one script, which Redis runs atomically like
-- MULTI/EXEC, with one thing EXEC cannot do: refuse to run late
-- (deadline.lua).
--
-- KEYS: text, meta, events, pending, marker, commits.
-- ARGV: deadline (us, Redis time), event (may be empty), name (the
-- commit's), scope (its name's first 8 digits when they name an
-- Idempotency-Key, else empty), then field, text, meta for each spill; a
-- meta prefixed with '=' (61) sends the spill without its text (an empty
-- text argument), which must be stored already: that is checked before
-- anything is written.
--
-- Each spill's text is written only if new (the first copy stays); its
-- meta value keeps the first spill's and takes the commit's place in the
-- spill order (spill.lua, order.lua). Nothing is written unless it returns
-- SCRIPT_WRITTEN; the codes are store/layout.h's layout_script_code.
--#include deadline.lua
if redis.call('EXISTS', KEYS[4]) == 1 then return -1 end -- SCRIPT_PENDING
--#include retry.lua
for i = 5, #ARGV, 3 do
  if string.byte(ARGV[i + 2]) == 61 and redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 then
    return -3 -- SCRIPT_TEXT_MISSING
  end
end
-- A retry is answered only when every text it names is stored; one that
-- vanished is written again.
for i = 5, #ARGV, 3 do
  if retry and redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 then retry = false end
end
if retry then return 2 end -- SCRIPT_ALREADY_WRITTEN
--#include order.lua
--#include spill.lua
for i = 5, #ARGV, 3 do
  local m = ARGV[i + 2]
  if string.byte(m) == 61 then m = string.sub(m, 2) else
    write_text(ARGV[i], ARGV[i + 1])
  end
  write_meta(ARGV[i], m, order)
end
return 1 -- SCRIPT_WRITTEN
