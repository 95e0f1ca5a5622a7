--[[
fixed-window/refund.lua: give back what one spend took, to the window it was taken from.

A counter belongs to the window whose end (+ offset) is its PEXPIRETIME. The spend at ARGV[3]
was charged to the window containing that instant; if the key now carries another expiry (the
window rolled over, the key expired, or it was reset) the refund does nothing. Never creates a
key, never goes below zero.

KEYS   as in consume.lua: KEYS[(k-1)*L + l] is caller key k under limit l
ARGV   [1] expiry offset (as in consume.lua)
       [2] cost that was charged
       [3] at: the spend's `now`
       [4] L: number of limits, then for l = 1..L: [3 + 2l] limit, [4 + 2l] window ms
Return number of counters reduced
]]
local rcall = redis.call

local offset = tonumber(ARGV[1])
local cost = tonumber(ARGV[2])
local at = tonumber(ARGV[3])
local limitCount = tonumber(ARGV[4])
local keyCount = #KEYS / limitCount
local reduced = 0

for l = 1, limitCount do
  local window = tonumber(ARGV[4 + 2 * l])
  local chargedEnd = (math.floor(at / window) + 1) * window
  for k = 1, keyCount do
    local key = KEYS[(k - 1) * limitCount + l]
    if rcall('PEXPIRETIME', key) == chargedEnd + offset then
      local count = tonumber(rcall('GET', key)) or 0
      if count <= cost then
        rcall('DEL', key)
      else
        rcall('DECRBY', key, cost)
      end
      reduced = reduced + 1
    end
  end
end

return reduced
