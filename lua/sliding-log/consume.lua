--[[
sliding-log/consume.lua: exact count over the trailing window; check every limit on every key and
spend on all of them only if all allow.

State per (key, limit): a sorted set with one member per unit spent, scored by the instant of the
spend. Members are "<spend id>" (cost 1) or "<spend id>.<n>" (n = 1..cost), so spends in the same
millisecond never collide and a refund removes exactly its own. Counted: scores in (now - window,
now]. Older members are pruned when the next spend writes; the key expires one window after its
newest member. Memory grows with the limit: O(limit) members per key.

KEYS, ARGV and the reply: see lib/consume-frame.lua (burst is not used; a spend id is required).
]]
--#include lib/prelude.lua

local function evaluate(key, limit, window)
  local since = '(' .. string.format('%d', now - window)
  local count = rcall('ZCOUNT', key, since, '+inf')
  local fits = count + cost <= limit
  local wait = 0
  if not fits then
    -- The (count + cost - limit)-th oldest counted member must leave the window first.
    local oldest = rcall('ZRANGEBYSCORE', key, since, '+inf', 'WITHSCORES', 'LIMIT', count + cost - limit - 1, 1)
    wait = tonumber(oldest[2]) + window - now
  end
  return {
    fits = fits,
    room = limit - count,
    wait = wait,
    reset = function(spent)
      if spent then return window end
      if count == 0 then return 0 end
      local newest = rcall('ZREVRANGEBYSCORE', key, '+inf', since, 'WITHSCORES', 'LIMIT', 0, 1)
      return tonumber(newest[2]) + window - now
    end,
  }
end

local function commit(key, ev, limit, window)
  rcall('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now - window))
  if cost == 1 then
    rcall('ZADD', key, now, spendId)
  else
    for first = 1, cost, 100 do
      local args = {}
      for n = first, math.min(cost, first + 99) do
        args[#args + 1] = now
        args[#args + 1] = spendId .. '.' .. n
      end
      rcall('ZADD', key, unpack(args))
    end
  end
  rcall('PEXPIREAT', key, now + window + offset)
end

--#include lib/consume-frame.lua
