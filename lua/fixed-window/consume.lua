--[[
fixed-window/consume.lua: check every limit on every key; spend on all of them only if all allow.

State per (key, limit): a plain integer counter whose absolute expiry IS its window's end
(+ offset). While the key lives with that expiry it belongs to the current window, so the value
needs no window id (72 bytes per key). A key whose PEXPIRETIME differs belongs to another window
(or to another algorithm) and counts as empty: this also covers the instant between the script's
start (when Redis checks expiry) and the TIME reading.

KEYS, ARGV and the reply: see lib/consume-frame.lua (burst is not used).
]]
--#include lib/prelude.lua

local function evaluate(key, limit, window)
  local windowEnd = (math.floor(now / window) + 1) * window
  local count = 0
  if rcall('PEXPIRETIME', key) == windowEnd + offset then
    count = tonumber(rcall('GET', key)) or 0
  end
  return {
    fits = count + cost <= limit,
    room = limit - count,
    wait = windowEnd - now,
    reset = function(spent)
      if spent or count > 0 then return windowEnd - now end
      return 0
    end,
    count = count,
    expireAt = windowEnd + offset,
  }
end

local function commit(key, ev)
  if ev.count == 0 then
    rcall('SET', key, cost, 'PXAT', ev.expireAt)
  else
    rcall('INCRBY', key, cost)
  end
end

--#include lib/consume-frame.lua
