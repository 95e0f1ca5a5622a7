--[[
fixed-window/consume.lua: check every limit on every key; spend on all of them only if all allow.

State per (key, limit): a plain integer counter whose absolute expiry IS its window's end
(+ ARGV[2]). While the key lives with that expiry it belongs to the current window, so the value
needs no window id (72 bytes per key). A key whose PEXPIRETIME differs belongs to another window
(or to another algorithm) and counts as empty: this also covers the instant between the script's
start (when Redis checks expiry) and the TIME reading.

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

local counts, ends = {}, {}
local allowed = true
local remaining, binding = math.huge, 1
local retryAfter, resetAfter, refusing, refusingLimit = 0, 0, 0, 1

for l = 1, limitCount do
  local limit = tonumber(ARGV[4 + 2 * l])
  local window = tonumber(ARGV[5 + 2 * l])
  local windowEnd = (math.floor(now / window) + 1) * window
  for k = 1, keyCount do
    local i = (k - 1) * limitCount + l
    local count = 0
    if rcall('PEXPIRETIME', KEYS[i]) == windowEnd + offset then
      count = tonumber(rcall('GET', KEYS[i])) or 0
    end
    counts[i], ends[i] = count, windowEnd
    local left = limit - count
    if count + cost > limit then
      allowed = false
      if windowEnd - now > retryAfter or refusing == 0 then
        retryAfter, refusing, refusingLimit = windowEnd - now, k, l
      end
    end
    if left < remaining then remaining, binding = left, l end
    if count > 0 and windowEnd - now > resetAfter then resetAfter = windowEnd - now end
  end
end

if allowed then
  for l = 1, limitCount do
    local window = tonumber(ARGV[5 + 2 * l])
    for k = 1, keyCount do
      local i = (k - 1) * limitCount + l
      if ends[i] - now > resetAfter then resetAfter = ends[i] - now end
      if spend then
        if counts[i] == 0 then
          rcall('SET', KEYS[i], cost, 'PXAT', ends[i] + offset)
        else
          rcall('INCRBY', KEYS[i], cost)
        end
      end
    end
  end
  retryAfter, refusing = 0, 0
  remaining = remaining - cost
end

if not allowed then binding = refusingLimit end

return { allowed and 1 or 0, remaining, binding, retryAfter, resetAfter, refusing, now }
