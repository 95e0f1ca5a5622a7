--[[
sliding-log/refund.lua: remove exactly the members one spend added (by its spend id). Members that
already left the window, or were pruned, are simply not there: nothing else is touched, and no key
is created. The expiry is kept.

KEYS, ARGV and the reply: see lib/refund-frame.lua.
]]

local function refund(key, limit, window, burst, at)
  if spendId == '' or at <= now - window then return 0 end -- its members no longer count
  local removed
  if cost == 1 then
    removed = rcall('ZREM', key, spendId)
  else
    removed = 0
    for first = 1, cost, 100 do
      local members = {}
      for n = first, math.min(cost, first + 99) do members[#members + 1] = spendId .. '.' .. n end
      removed = removed + rcall('ZREM', key, unpack(members))
    end
  end
  if removed > 0 then return 1 end
  return 0
end

--#include lib/refund-frame.lua
