--[[
board/read.lua: what the ops board shows, read from its book (lib/stores/board-book.redis.ts).
Modes (ARGV[4]):
- `rates`: KEYS are count buckets; returns each one's HGETALL.
- `top`: KEYS[1] a scratch key, KEYS[2…] refusal sets in groups (ARGV[6…] the group sizes);
  returns, per group, the ARGV[5] members with the highest summed counts over the group's sets
  (ZUNIONSTORE into the scratch key, deleted before the script returns), with their counts.
- `locks`: KEYS[1] the lockout list, KEYS[2] when each was first seen; returns the ARGV[5]
  lockouts ending soonest after now (members with ends), and when each was first seen.
- `cards`: KEYS[1] the policy cards; returns HGETALL.
- `audit`: KEYS[1] the audit stream; returns its ARGV[5] latest entries, newest first.

KEYS   see the modes
ARGV   [1] now ('' for Redis TIME)  [2] expiry offset (unused)  [3] unused  [4] mode  [5…] see the modes
Return { now, what the mode returns }
]]
local function main()
  local mode = ARGV[4]
  if mode == 'rates' then
    local out = {}
    for k = 1, #KEYS do out[k] = rcall('HGETALL', KEYS[k]) end
    return { now, out }
  elseif mode == 'top' then
    local top, scratch, out, k = tonumber(ARGV[5]), KEYS[1], {}, 2
    for g = 6, #ARGV do
      local size = tonumber(ARGV[g])
      local sets = {}
      for j = 1, size do sets[j] = KEYS[k + j - 1] end
      k = k + size
      local found = {}
      if size > 0 and rcall('ZUNIONSTORE', scratch, size, unpack(sets)) > 0 then
        found = rcall('ZREVRANGE', scratch, 0, top - 1, 'WITHSCORES')
        rcall('DEL', scratch)
      end
      out[#out + 1] = found
    end
    return { now, out }
  elseif mode == 'locks' then
    local listed = rcall('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0,
      tonumber(ARGV[5]))
    local members = {}
    for j = 1, #listed, 2 do members[#members + 1] = listed[j] end
    -- HMGET a thousand at a time (unpack has a limit of a few thousand values).
    local seen = {}
    for j = 1, #members, 1000 do
      local part = rcall('HMGET', KEYS[2], unpack(members, j, math.min(j + 999, #members)))
      for p = 1, #part do seen[#seen + 1] = part[p] or '' end
    end
    return { now, listed, seen }
  elseif mode == 'cards' then
    return { now, rcall('HGETALL', KEYS[1]) }
  elseif mode == 'audit' then
    return { now, rcall('XREVRANGE', KEYS[1], '+', '-', 'COUNT', tonumber(ARGV[5])) }
  end
  return redis.error_reply('redlimit: board/read has no mode ' .. tostring(mode))
end
