-- Whether a commit landed, asked after its reply was lost. Read-only.
-- KEYS: text, events, marker. ARGV: since (a stream id), name (may be
-- empty), fields.
--
-- With a name: whether the marker of a staged commit exists, or a log
-- entry since ARGV[1] carries the name (the entry and the spills are one
-- atomic script). Without (a commit with no log entry): whether every
-- field in ARGV[3..] exists, which is what its answer promises (content
-- addressing: the first copy stays).
if ARGV[2] ~= '' then
  if redis.call('EXISTS', KEYS[3]) == 1 then return 1 end -- SCRIPT_LANDED
  for _, e in ipairs(redis.call('XRANGE', KEYS[2], ARGV[1], '+')) do
    local f = e[2]
    for j = 1, #f - 1, 2 do
      if f[j] == 'commit' and f[j + 1] == ARGV[2] then return 1 end -- SCRIPT_LANDED
    end
  end
  return 0 -- SCRIPT_NOT_LANDED
end
for i = 3, #ARGV do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 then return 0 end -- SCRIPT_NOT_LANDED
end
return 1 -- SCRIPT_LANDED
