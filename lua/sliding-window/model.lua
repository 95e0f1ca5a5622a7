--[[
sliding-window/model.lua: evaluate, resetIn and commit (see lib/decide.lua)
for sliding-window, as lib/consume-frame.lua and lib/stack-frame.lua call them. Reads the prelude's
now, offset, cost and spendId (cost is set per part by the stack frame). Included by
sliding-window/consume.lua and stack/consume.lua; see consume.lua for the stored state.
]]
-- Earliest wait (ms) until `cost` fits, given the counts of the current window.
local function waitFor(cur, prev, limit, window, e)
  local room = limit - cur - cost
  if room >= 0 and prev > 0 then
    -- Later in this window, once prev's weight has shrunk enough: prev * (window - e') <= room * window.
    local at = window - math.floor(room * window / prev)
    if at <= window - 1 then return at - e end
  end
  -- In the next window, where cur becomes prev: cur * (window - e') <= (limit - cost) * window.
  local at = 0
  if cur > 0 then at = math.max(0, window - math.floor((limit - cost) * window / cur)) end
  return window - e + at
end

local function evaluate(key, limit, window, burst, ev)
  local w = math.floor(now / window)
  local e = now - w * window
  local cur, prev = 0, 0
  ev.seen, ev.later = nil, false
  local raw = rcall('GET', key)
  if raw then
    local sw, c, p = string.match(raw, '^(%d+):(%d+):(%d+)$')
    sw, c, p = tonumber(sw), tonumber(c), tonumber(p)
    if sw == w then
      cur, prev = c, p
    elseif sw == w - 1 then
      prev = c
    elseif sw and sw > w then
      ev.fits, ev.room, ev.wait, ev.seen, ev.later = false, 0, 0, sw * window, true
      return ev
    end
  end
  local weighted = prev * (window - e)
  local fits = weighted + (cur + cost) * window <= limit * window
  ev.fits = fits
  ev.room = math.floor((limit * window - weighted) / window) - cur
  ev.wait = fits and 0 or waitFor(cur, prev, limit, window, e)
  ev.w, ev.e, ev.cur, ev.prev = w, e, cur, prev
  return ev
end

local function resetIn(ev, spent, key, limit, window)
  if ev.later then return 0 end
  if ev.cur > 0 or spent then return 2 * window - ev.e end
  if ev.prev > 0 then return window - ev.e end
  return 0
end

local function commit(key, ev, limit, window)
  rcall('SET', key, string.format('%d:%d:%d', ev.w, ev.cur + cost, ev.prev), 'PXAT', (ev.w + 2) * window + offset)
end
