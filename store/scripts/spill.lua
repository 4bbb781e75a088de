-- Included by the scripts that write spills (commit.lua, merge.lua), whose
-- KEYS[1] and KEYS[2] are the session's text and meta hashes.

-- Writes spill field f's text: the first copy stays.
local function write_text(f, text)
  redis.call('HSETNX', KEYS[1], f, text)
end

-- Writes spill field f's meta value m at order: the first spill's class,
-- tokens, created_at and unit metadata stay, and the commit's place in the
-- spill order goes in as a fourth word, before the unit metadata (see
-- layout_meta_order() in store/layout.h).
local function write_meta(f, m, order)
  local head, rest = string.match(redis.call('HGET', KEYS[2], f) or m,
                                  '^(%S+ %S+ %S+)(.*)$')
  rest = (string.gsub(rest, '^ %d+%-%d+', '', 1))
  redis.call('HSET', KEYS[2], f, head .. ' ' .. order .. rest)
end
