--[[
fixed-window/model.lua: evaluate(key, limit, window, burst) and commit(key, ev, limit, window, burst)
for fixed-window, as lib/consume-frame.lua and lib/stack-frame.lua call them. Reads the prelude's
now, offset, cost and spendId (cost is set per part by the stack frame). Included by
fixed-window/consume.lua, fixed-window/refund.lua (for readCounter) and lib/models.lua; see
consume.lua for the stored state.
]]
-- The counter and the end of the window it counts (nil: no counter of this algorithm).
local function readCounter(key, window)
  if customClock then
    local raw = rcall('GET', key)
    if not raw then return 0, nil end
    local count, stored = string.match(raw, '^(%d+):(%d+)$')
    return tonumber(count) or 0, tonumber(stored)
  end
  local stored = rcall('PEXPIRETIME', key)
  if stored <= 0 or stored % window ~= 0 then return 0, nil end -- none, or not a window's end
  local count = tonumber(rcall('GET', key))
  if not count then return 0, nil end
  return count, stored
end

local function evaluate(key, limit, window)
  local windowEnd = (math.floor(now / window) + 1) * window
  local count, stored = readCounter(key, window)
  if not stored or stored < windowEnd then
    count = 0 -- an earlier window's counter counts as empty
  elseif stored > windowEnd then
    -- A later window's counter: the clock stepped back. Time is never earlier than the state has
    -- seen: the frame evaluates again from the start of that window.
    return { fits = false, room = 0, wait = 0, seen = stored - window, reset = function() return 0 end }
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
    windowEnd = windowEnd,
  }
end

local function commit(key, ev)
  if customClock then
    rcall('SET', key, string.format('%d:%d', ev.count + cost, ev.windowEnd), 'PXAT', ev.windowEnd + offset)
  elseif ev.count == 0 then
    rcall('SET', key, cost, 'PXAT', ev.windowEnd)
  else
    rcall('INCRBY', key, cost)
  end
end
