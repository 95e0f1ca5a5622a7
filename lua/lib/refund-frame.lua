--[[
lib/refund-frame.lua: the part of every refund script that is the same for all algorithms.
Included at the end of lua/<algorithm>/refund.lua, which defines:

  refund(key, limit, window, burst, at) -> 1 if it gave anything back, else 0
      gives back `cost` units charged at instant `at` (ARGV[4]) by spend `spendId` (ARGV[5]),
      to the window/bucket they were taken from; never below zero, never creating a key

KEYS   as in consume-frame.lua
ARGV   [1] now ('' for Redis TIME)  [2] expiry offset  [3] cost that was charged
       [4] at: the spend's `now`    [5] spend id (or '')    [6] unused (a late refund still applies)
       [7] L, then for l = 1..L: [5 + 3l] limit, [6 + 3l] window ms, [7 + 3l] burst
Return number of (key, limit) states that gave something back
]]
local at = tonumber(ARGV[4])
local limitCount = tonumber(ARGV[7])
local keyCount = #KEYS / limitCount
local reduced = 0

for l = 1, limitCount do
  local limit, window, burst = tonumber(ARGV[5 + 3 * l]), tonumber(ARGV[6 + 3 * l]), tonumber(ARGV[7 + 3 * l])
  for k = 1, keyCount do
    reduced = reduced + refund(KEYS[(k - 1) * limitCount + l], limit, window, burst, at)
  end
end

return reduced
