--[[
sliding-log/refund.lua: remove exactly the members one spend added (by its spend id), or, to
adjust it up, add members at its instant (while they would still count). Members that already
left the window, or were pruned, are simply not there: nothing else is touched, a refund creates
no key, and the expiry is only ever lengthened.

KEYS, ARGV and the reply: see lib/refund-frame.lua.
]]

-- Member n of the spend: "<id>" for a spend of one unit, else "<id>.<n>" (n = 1..).
local function member(n)
  if n == 1 and reserved == 1 then return spendId end
  return spendId .. '.' .. n
end

-- The last member of units keep + 1 .. keep + cost that is stored: a spend keeps at most
-- max(limit, reserved) members, since members beyond the limit at one instant never change a
-- decision (the log is full until they leave together).
local function lastStored(limit)
  return math.min(keep + cost, math.max(limit, reserved))
end

local function refund(key, limit, window, burst, at)
  if spendId == '' or at <= now - window then return 0 end -- its members no longer count
  local removed, last = 0, lastStored(limit)
  for first = keep + 1, last, 100 do
    local members = {}
    for n = first, math.min(last, first + 99) do members[#members + 1] = member(n) end
    removed = removed + rcall('ZREM', key, unpack(members))
  end
  if removed > 0 then return 1 end
  return 0
end

local function charge(key, limit, window, burst, at)
  if spendId == '' or at <= now - window then return 0 end -- they would no longer count
  local last = lastStored(limit)
  if last <= keep then return 0 end -- the spend already fills the log until it leaves
  for first = keep + 1, last, 100 do
    local args = {}
    for n = first, math.min(last, first + 99) do
      args[#args + 1] = at
      args[#args + 1] = member(n)
    end
    rcall('ZADD', key, unpack(args))
  end
  local expireAt = at + window + offset
  if rcall('PEXPIRETIME', key) < expireAt then rcall('PEXPIREAT', key, expireAt) end
  return 1
end

-- A grant: the newest `cost` members go (in the set's order: by instant, then by name), so a
-- receipt refunded after it removes only what is still there.
local function grant(key, limit, window, burst)
  if rcall('ZREMRANGEBYRANK', key, -cost, -1) > 0 then return 1 end
  return 0
end

--#include lib/refund-frame.lua
