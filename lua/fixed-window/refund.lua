--[[
fixed-window/refund.lua: give back what one spend took, to the window it was taken from.

A counter belongs to the window whose end (+ offset) is its PEXPIRETIME. The spend at `at` was
charged to the window containing that instant; if the key now carries another expiry (the window
rolled over, the key expired, or it was reset) the refund does nothing. Never creates a key, never
goes below zero.

KEYS, ARGV and the reply: see lib/refund-frame.lua.
]]
--#include lib/prelude.lua

local function refund(key, limit, window, burst, at)
  local chargedEnd = (math.floor(at / window) + 1) * window
  if now >= chargedEnd then return 0 end -- that window is over
  if rcall('PEXPIRETIME', key) ~= chargedEnd + offset then return 0 end
  local count = tonumber(rcall('GET', key)) or 0
  if count <= cost then
    rcall('DEL', key)
  else
    rcall('DECRBY', key, cost)
  end
  return 1
end

--#include lib/refund-frame.lua
