--[[
fixed-window/model.lua: evaluate(key, limit, window, burst) and commit(key, ev, limit, window, burst)
for fixed-window, as lib/consume-frame.lua and lib/stack-frame.lua call them. Reads the prelude's
now, offset, cost and spendId (cost is set per part by the stack frame). Included by
fixed-window/consume.lua and stack/consume.lua; see consume.lua for the stored state.
]]
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
