--[[
board/write.lua: one flush of an app's board recorder (lib/board/board-recorder.ts) into the ops
board's book (lib/stores/board-book.redis.ts): counts per policy and outcome added to the current
10 s bucket, refusals per key added to the current minute's set of their policy and kind (each set
keeps its `maxSet` members refused most), lockouts listed by end (a lockout that ended is
forgotten, the list keeps its `maxLocks` latest-ending ones), the app's policy cards. Every key
expires: buckets and sets after `keep`, the cards `cardKeep` after the last write, the lockout
list when its last lockout ends.

KEYS   [1] counts of the current bucket (hash)  [2] lockouts (zset: member → end)
       [3] when each lockout was first seen (hash)  [4] policy cards (hash)
       [5] recent unlocks (zset: member → when; a lockout last seen refusing at or before its
       unlock is not listed again)
       [6…] the current minute's refusal sets, one per group of ARGV (zsets: member → count)
ARGV   [1] now ('' for Redis TIME)  [2] expiry offset (unused)  [3] unused
       [4] keep ms  [5] card keep ms  [6] maxSet  [7] maxLocks
       then n, n × (field, count); c, c × (policy name, card);
       l, l × (member, end, first seen, last seen);
       then for each refusal set: k, k × (member, count)
Return the number of lockouts listed
]]
local function main()
  local keep, cardKeep = tonumber(ARGV[4]), tonumber(ARGV[5])
  local maxSet, maxLocks = tonumber(ARGV[6]), tonumber(ARGV[7])
  local i = 8
  local n = tonumber(ARGV[i])
  i = i + 1
  for _ = 1, n do
    rcall('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1])
    i = i + 2
  end
  if n > 0 then rcall('PEXPIRE', KEYS[1], keep) end
  local c = tonumber(ARGV[i])
  i = i + 1
  for _ = 1, c do
    rcall('HSET', KEYS[4], ARGV[i], ARGV[i + 1])
    i = i + 2
  end
  if c > 0 then rcall('PEXPIRE', KEYS[4], cardKeep) end
  local locks, since = KEYS[2], KEYS[3]
  local l = tonumber(ARGV[i])
  i = i + 1
  for _ = 1, l do
    local member, ends, seen = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
    local last = tonumber(ARGV[i + 3])
    i = i + 4
    local unlocked = tonumber(rcall('ZSCORE', KEYS[5], member))
    if ends > now and not (unlocked and last <= unlocked) then
      local held = tonumber(rcall('ZSCORE', locks, member))
      if not held or held <= now then
        rcall('HSET', since, member, math.min(seen, now))
        rcall('ZADD', locks, ends, member)
      elseif ends > held then
        rcall('ZADD', locks, ends, member)
      end
    end
  end
  -- Lockouts that ended are forgotten (a thousand per flush: the rest at the next ones).
  local ended = rcall('ZRANGEBYSCORE', locks, '-inf', now, 'LIMIT', 0, 1000)
  if #ended > 0 then
    rcall('ZREM', locks, unpack(ended))
    rcall('HDEL', since, unpack(ended))
  end
  local listed = rcall('ZCARD', locks)
  if listed > maxLocks then
    local dropped = rcall('ZRANGE', locks, 0, listed - maxLocks - 1)
    for j = 1, #dropped, 1000 do
      local part = { unpack(dropped, j, math.min(j + 999, #dropped)) }
      rcall('ZREM', locks, unpack(part))
      rcall('HDEL', since, unpack(part))
    end
    listed = maxLocks
  end
  if listed > 0 then
    local last = rcall('ZRANGE', locks, -1, -1, 'WITHSCORES')
    local life = tonumber(last[2]) - now + keep
    rcall('PEXPIRE', locks, life)
    rcall('PEXPIRE', since, life)
  end
  for s = 6, #KEYS do
    local set = KEYS[s]
    local k = tonumber(ARGV[i])
    i = i + 1
    for _ = 1, k do
      rcall('ZINCRBY', set, ARGV[i + 1], ARGV[i])
      i = i + 2
    end
    local size = rcall('ZCARD', set)
    if size > maxSet then rcall('ZREMRANGEBYRANK', set, 0, size - maxSet - 1) end
    if k > 0 then rcall('PEXPIRE', set, keep) end
  end
  return listed
end
