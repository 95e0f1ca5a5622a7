--[[
fixed-window/refund.lua: give back what one spend took, to the window it was taken from (or, to
adjust it up, charge the extra to that window).

A counter belongs to the window whose end is its PEXPIRETIME (on a custom clock: the end its
value names, see consume.lua). The spend at `at` was charged to the window containing that instant;
if the key now counts another window (it rolled over, the key expired, or it was reset) the refund
does nothing. Never creates a key, never goes below zero.

KEYS, ARGV and the reply: see lib/refund-frame.lua.
]]
--#include fixed-window/model.lua

local function refund(key, limit, window, burst, at)
  local chargedEnd = (math.floor(at / window) + 1) * window
  if now >= chargedEnd then return 0 end -- that window is over
  local count, stored = readCounter(key, window)
  if stored ~= chargedEnd or count == 0 then return 0 end
  if count <= cost then
    rcall('DEL', key)
  elseif customClock then
    rcall('SET', key, string.format('%d:%d', count - cost, stored), 'KEEPTTL')
  else
    rcall('DECRBY', key, cost)
  end
  return 1
end

local function charge(key, limit, window, burst, at)
  local chargedEnd = (math.floor(at / window) + 1) * window
  if now >= chargedEnd then return 0 end -- that window is over: the extra weighs on nothing
  local count, stored = readCounter(key, window)
  if stored and stored ~= chargedEnd then return 0 end -- another window's counter (clock stepped back)
  if customClock then
    rcall('SET', key, string.format('%d:%d', count + cost, chargedEnd), 'PXAT', chargedEnd + offset)
  elseif stored then
    rcall('INCRBY', key, cost)
  else
    rcall('SET', key, cost, 'PXAT', chargedEnd) -- refunded to nothing since: the window's counter again
  end
  return 1
end

-- A grant: `cost` units off the current window's counter, never below zero.
local function grant(key, limit, window, burst)
  return refund(key, limit, window, burst, now)
end

--#include lib/refund-frame.lua
