--[[
sliding-window/model.lua: evaluate(key, limit, window, burst) and commit(key, ev, limit, window, burst)
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

local function evaluate(key, limit, window)
  local w = math.floor(now / window)
  local e = now - w * window
  local cur, prev = 0, 0
  local raw = rcall('GET', key)
  if raw then
    local sw, c, p = string.match(raw, '^(%d+):(%d+):(%d+)$')
    sw, c, p = tonumber(sw), tonumber(c), tonumber(p)
    if sw == w then
      cur, prev = c, p
    elseif sw == w - 1 then
      prev = c
    elseif sw and sw > w then
      -- A later window's state: the clock stepped back. Time is never earlier than the state has
      -- seen: the frame evaluates again from the start of that window.
      return { fits = false, room = 0, wait = 0, seen = sw * window, reset = function() return 0 end }
    end
  end
  local weighted = prev * (window - e)
  local fits = weighted + (cur + cost) * window <= limit * window
  return {
    fits = fits,
    room = math.floor((limit * window - weighted) / window) - cur,
    wait = fits and 0 or waitFor(cur, prev, limit, window, e),
    reset = function(spent)
      if cur > 0 or spent then return 2 * window - e end
      if prev > 0 then return window - e end
      return 0
    end,
    w = w, cur = cur, prev = prev,
  }
end

local function commit(key, ev, limit, window)
  rcall('SET', key, string.format('%d:%d:%d', ev.w, ev.cur + cost, ev.prev), 'PXAT', (ev.w + 2) * window + offset)
end
