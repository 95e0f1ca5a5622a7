--[[
sliding-window/consume.lua: weighted two-window counter; check every limit on every key and
spend on all of them only if all allow.

State per (key, limit): the string "w:cur:prev", where w = floor(now / window) when last written,
cur = units charged in window w and prev = units charged in window w - 1. The key expires at the
end of window w + 1, after which cur no longer weighs on anything.

With e = now - w * window elapsed in the current window, the estimate is
  prev * (window - e) / window + cur
and a call of `cost` is allowed when prev * (window - e) + (cur + cost) * window <= limit * window,
all in whole numbers (limit * window < 2^53 is checked before the script runs).

KEYS   one per (caller key, limit), key-major: KEYS[(k-1)*L + l] is caller key k under limit l
ARGV   [1] now: ms on the limiter's clock, or '' to read Redis TIME
       [2] expiry offset: ms added to window ends for absolute expiries (0 on the Redis clock)
       [3] cost: whole units to charge on every key
       [4] mode: '1' spend, '0' peek (write nothing)
       [5] L: number of limits, then for l = 1..L: [4 + 2l] limit, [5 + 2l] window ms
Return {allowed 0|1, remaining, binding limit (1-based: the refusing one when refused), retryAfterMs, resetAfterMs,
        refusing key (1-based, 0 if allowed), now}
]]
local rcall = redis.call

local now
if ARGV[1] == '' then
  local t = rcall('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[1])
end
local offset = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local spend = ARGV[4] == '1'
local limitCount = tonumber(ARGV[5])
local keyCount = #KEYS / limitCount

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

local states = {}
local allowed = true
local remaining, binding = math.huge, 1
local retryAfter, refusing, refusingLimit = 0, 0, 1

for l = 1, limitCount do
  local limit = tonumber(ARGV[4 + 2 * l])
  local window = tonumber(ARGV[5 + 2 * l])
  local w = math.floor(now / window)
  local e = now - w * window
  for k = 1, keyCount do
    local i = (k - 1) * limitCount + l
    local cur, prev = 0, 0
    local raw = rcall('GET', KEYS[i])
    if raw then
      local sw, c, p = string.match(raw, '^(%d+):(%d+):(%d+)$')
      sw, c, p = tonumber(sw), tonumber(c), tonumber(p)
      if sw == w then
        cur, prev = c, p
      elseif sw == w - 1 then
        prev = c
      end
    end
    local weighted = prev * (window - e)
    local fits = weighted + (cur + cost) * window <= limit * window
    if not fits then
      allowed = false
      local wait = waitFor(cur, prev, limit, window, e)
      if wait > retryAfter or refusing == 0 then retryAfter, refusing, refusingLimit = wait, k, l end
    end
    local left = math.floor((limit * window - weighted) / window) - cur
    if left < remaining then remaining, binding = left, l end
    states[i] = { w, cur, prev, window, e }
  end
end

local resetAfter = 0
for i = 1, #KEYS do
  local s = states[i]
  local w, cur, prev, window, e = s[1], s[2], s[3], s[4], s[5]
  if allowed then cur = cur + cost end
  local reset = 0
  if cur > 0 then reset = 2 * window - e elseif prev > 0 then reset = window - e end
  if reset > resetAfter then resetAfter = reset end
  if allowed and spend then
    rcall('SET', KEYS[i], string.format('%d:%d:%d', w, cur, prev), 'PXAT', (w + 2) * window + offset)
  end
end

if allowed then retryAfter, refusing, remaining = 0, 0, remaining - cost end

if not allowed then binding = refusingLimit end

return { allowed and 1 or 0, remaining, binding, retryAfter, resetAfter, refusing, now }
