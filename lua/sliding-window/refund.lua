--[[
sliding-window/refund.lua: give back what one spend took, to the window it was taken from (or, to
adjust it up, charge the extra to that window).

The spend at `at` was charged to window wc = floor(at / window). If the stored state's current
window is wc, the units come off cur; if it has moved on to wc + 1, they come off prev (wc's count,
now weighted); otherwise wc no longer weighs on anything and the refund does nothing. The expiry is
kept, counts never go below zero, and no key is created.

KEYS, ARGV and the reply: see lib/refund-frame.lua.
]]

local function refund(key, limit, window, burst, at)
  local charged = math.floor(at / window)
  if math.floor(now / window) > charged + 1 then return 0 end -- it no longer weighs on anything
  local raw = rcall('GET', key)
  if not raw then return 0 end
  local sw, cur, prev = string.match(raw, '^(%d+):(%d+):(%d+)$')
  sw, cur, prev = tonumber(sw), tonumber(cur), tonumber(prev)
  if sw == charged and cur > 0 then
    cur = cur - math.min(cost, cur)
  elseif sw == charged + 1 and prev > 0 then
    prev = prev - math.min(cost, prev)
  else
    return 0
  end
  if cur == 0 and prev == 0 then
    rcall('DEL', key)
  else
    rcall('SET', key, string.format('%d:%d:%d', sw, cur, prev), 'KEEPTTL')
  end
  return 1
end

local function charge(key, limit, window, burst, at)
  local charged = math.floor(at / window)
  local w = math.floor(now / window)
  if w > charged + 1 then return 0 end -- that window no longer weighs on anything
  local sw, cur, prev = w, 0, 0 -- no state (refunded to nothing since): as of the current window
  local raw = rcall('GET', key)
  if raw then
    sw, cur, prev = string.match(raw, '^(%d+):(%d+):(%d+)$')
    sw, cur, prev = tonumber(sw), tonumber(cur), tonumber(prev)
  end
  if sw == charged then
    cur = cur + cost
  elseif sw == charged + 1 then
    prev = prev + cost
  else
    return 0
  end
  rcall('SET', key, string.format('%d:%d:%d', sw, cur, prev), 'PXAT', (sw + 2) * window + offset)
  return 1
end

-- A grant: `cost` units of room now, off the current window's count first, then the fewest units
-- off the previous window's that make the room a decision sees now exactly `cost` more (its
-- weight is fractional: room already part free counts), or all of it; never below zero, the
-- expiry kept.
local function grant(key, limit, window, burst)
  local raw = rcall('GET', key)
  if not raw then return 0 end
  local sw, cur, prev = string.match(raw, '^(%d+):(%d+):(%d+)$')
  sw, cur, prev = tonumber(sw), tonumber(cur), tonumber(prev)
  local w = math.floor(now / window)
  if sw == w - 1 then
    sw, cur, prev = w, 0, cur -- (as a decision reads it: its count is now the previous window's)
  elseif sw ~= w then
    return 0 -- nothing weighs any more (or a later window's state: the clock stepped back)
  end
  local weight = window - (now - w * window)
  local target = math.floor((limit * window - prev * weight) / window) - cur + cost -- the room wanted
  local fromCur = math.min(cost, cur)
  local fromPrev, left = 0, cur - fromCur
  if fromCur < cost and prev > 0 then
    -- the least p with floor((limit * window - (prev - p) * weight) / window) - left >= target
    local p = math.ceil(((target + left - limit) * window + prev * weight) / weight)
    fromPrev = math.max(0, math.min(prev, p))
  end
  if fromCur == 0 and fromPrev == 0 then return 0 end
  cur, prev = cur - fromCur, prev - fromPrev
  if cur == 0 and prev == 0 then
    rcall('DEL', key)
  else
    rcall('SET', key, string.format('%d:%d:%d', sw, cur, prev), 'KEEPTTL')
  end
  return 1
end

--#include lib/refund-frame.lua
