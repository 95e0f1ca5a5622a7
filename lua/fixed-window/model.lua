--[[
fixed-window/model.lua: evaluate, resetIn and commit (see lib/decide.lua)
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
  local raw = rcall('GET', key)
  local count = raw and number(raw)
  if not count then return 0, nil end
  return count, stored
end

local function evaluate(key, limit, window, burst, ev)
  local windowEnd = (floor(now / window) + 1) * window
  local count, stored = readCounter(key, window)
  ev.windowEnd, ev.seen, ev.later = windowEnd, nil, false
  if not stored or stored < windowEnd then
    count = 0 -- an earlier window's counter counts as empty
  elseif stored > windowEnd then
    -- A later window's counter: the clock stepped back. Time is never earlier than the state has
    -- seen: the frame evaluates again from the start of that window.
    ev.fits, ev.room, ev.wait, ev.count, ev.seen, ev.later = false, 0, 0, 0, stored - window, true
    return ev
  end
  ev.fits, ev.room, ev.wait, ev.count = count + cost <= limit, limit - count, windowEnd - now, count
  return ev
end

local function resetIn(ev, spent)
  if not ev.later and (spent or ev.count > 0) then return ev.windowEnd - now end
  return 0
end

local function commit(key, ev)
  if customClock then
    rcall('SET', key, string.format('%d:%d', ev.count + cost, ev.windowEnd), 'PXAT', ev.windowEnd + offset)
  elseif ev.count == 0 then
    rcall('SET', key, TEXT[cost] or cost, 'PXAT', ev.windowEnd)
  else
    rcall('INCRBY', key, TEXT[cost] or cost)
  end
end
