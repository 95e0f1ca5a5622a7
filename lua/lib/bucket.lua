--[[
lib/bucket.lua: what token-bucket and gcra share. They are one state machine, stored two ways.

Units: one token is `window` units; the bucket drains its backlog at `limit` units per ms (refill
of `limit` tokens per `window`); capacity is burst * window units. So every quantity is a whole
number even for rates like 3 per 7 s (burst * window < 2^53 is checked before the script runs).

State (through the including script's decode/encode): the backlog b at `now` (capacity minus the
tokens left), when the current busy period began (the first spend since the bucket was last full),
m, the smallest backlog seen just before any later spend of that period (-1: none yet), and when
the latest spend happened.

A refund of `cost` spent at `at` gives back nothing if the bucket has been full since `at`; else
min(cost, b) units if it is the latest spend (exactly what removing it from history would give
back), and min(cost, b, m) for an earlier one (never more than removing it would; possibly less).

Requires decode(raw, capacity, limit) -> b, busyStart, m, lastAt
     and encode(b, busyStart, m, lastAt, capacity, limit).
]]

-- Floor and ceiling of x / y for whole numbers, exact in doubles.
local function floorDiv(x, y)
  local q = math.floor(x / y)
  if q * y > x then q = q - 1 elseif (q + 1) * y <= x then q = q + 1 end
  return q
end
local function ceilDiv(x, y)
  local q = floorDiv(x, y)
  if q * y < x then q = q + 1 end
  return q
end

local function load(key, limit, window, burst)
  local capacity = burst * window
  local raw = rcall('GET', key)
  if not raw then return 0, -1, -1, -1, capacity end
  local b, busyStart, m, lastAt = decode(raw, capacity, limit)
  if not b or b <= 0 then return 0, -1, -1, -1, capacity end -- full: the busy period is over
  return math.min(b, capacity), busyStart, m, lastAt, capacity
end

local function store(key, b, busyStart, m, lastAt, capacity, limit)
  if b <= 0 then
    rcall('DEL', key)
  else
    rcall('SET', key, encode(b, busyStart, m, lastAt, capacity, limit), 'PXAT', now + ceilDiv(b, limit) + offset)
  end
end

local function evaluate(key, limit, window, burst)
  local b, busyStart, m, lastAt, capacity = load(key, limit, window, burst)
  local units = cost * window
  local fits = b + units <= capacity
  return {
    fits = fits,
    room = floorDiv(capacity - b, window),
    wait = fits and 0 or ceilDiv(b + units - capacity, limit),
    reset = function(spent)
      if spent then return ceilDiv(b + units, limit) end
      return ceilDiv(b, limit)
    end,
    b = b, busyStart = busyStart, m = m, capacity = capacity, units = units,
  }
end

local function commit(key, ev, limit)
  local busyStart, m = ev.busyStart, ev.m
  if ev.b == 0 then
    busyStart, m = now, -1
  elseif m < 0 or ev.b < m then
    m = ev.b
  end
  store(key, ev.b + ev.units, busyStart, m, now, ev.capacity, limit)
end

local function refund(key, limit, window, burst, at)
  local b, busyStart, m, lastAt, capacity = load(key, limit, window, burst)
  if b == 0 or at < busyStart then return 0 end
  local back = math.min(cost * window, b)
  if at < lastAt and m >= 0 then back = math.min(back, m) end
  if back <= 0 then return 0 end
  if m >= 0 then m = math.max(0, m - back) end
  store(key, b - back, busyStart, m, lastAt, capacity, limit)
  return 1
end
