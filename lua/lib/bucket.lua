--[[
lib/bucket.lua: what token-bucket and gcra share. They are one state machine, stored two ways.

Units: one token is `window` units; the bucket drains its backlog at `limit` units per ms (refill
of `limit` tokens per `window`); capacity is burst * window units. So every quantity is a whole
number even for rates like 3 per 7 s (burst * window < 2^53 is checked before the script runs).

State (through the including script's decode/encode), a table:
  b           the backlog at `now` (capacity minus the tokens left), in units
  busyStart   when the current busy period began (the first spend since the bucket was last full)
  m           the smallest backlog seen just before any later spend of that period (-1: none yet)
  lastAt      when the latest spend happened
  prevM, prevLastAt   m and lastAt as they were before the latest spend

A refund of `cost` spent at `at` gives back nothing if the bucket has been full since `at`; else
min(cost, b) units if it is the latest spend, which is exactly what removing it from history would
give back, and then m and lastAt are restored as if it had never happened (so a refused call that
was compensated on Cluster leaves no trace); and min(cost, b, m) for an earlier spend, never more
than removing it would give back (possibly less).

Requires decode(raw, capacity, limit) -> state or nil  and  encode(state, capacity, limit).
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

local EMPTY = { b = 0, busyStart = -1, m = -1, lastAt = -1, prevM = -1, prevLastAt = -1 }

local function load(key, limit, window, burst)
  local capacity = burst * window
  local raw = rcall('GET', key)
  local state = raw and decode(raw, capacity, limit)
  if not state or state.b <= 0 then return EMPTY, capacity end -- full: the busy period is over
  state.b = math.min(state.b, capacity)
  return state, capacity
end

local function store(key, state, capacity, limit)
  if state.b <= 0 then
    rcall('DEL', key)
  else
    rcall('SET', key, encode(state, capacity, limit), 'PXAT', now + ceilDiv(state.b, limit) + offset)
  end
end

local function evaluate(key, limit, window, burst)
  local state, capacity = load(key, limit, window, burst)
  local b = state.b
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
    state = state, capacity = capacity, units = units,
  }
end

local function commit(key, ev, limit)
  local s = ev.state
  local next = { b = s.b + ev.units, lastAt = now, prevM = s.m, prevLastAt = s.lastAt }
  if s.b == 0 then
    next.busyStart, next.m, next.prevM, next.prevLastAt = now, -1, -1, -1
  else
    next.busyStart = s.busyStart
    next.m = (s.m < 0 or s.b < s.m) and s.b or s.m
  end
  store(key, next, ev.capacity, limit)
end

local function refund(key, limit, window, burst, at)
  local s, capacity = load(key, limit, window, burst)
  if s.b == 0 or at < s.busyStart then return 0 end
  local back = math.min(cost * window, s.b)
  local latest = at == s.lastAt -- (not >=: after the clock stepped back, a later `at` is no proof)
  if not latest and s.m >= 0 then back = math.min(back, s.m) end
  if back <= 0 then return 0 end
  local next = { b = s.b - back, busyStart = s.busyStart }
  if latest then
    -- As if it never happened: the running minimum and latest spend from before it.
    next.m, next.lastAt = s.prevM, s.prevLastAt
    next.prevM, next.prevLastAt = s.prevM, s.prevLastAt
  else
    next.m = s.m >= 0 and math.max(0, s.m - back) or -1
    next.prevM = s.prevM >= 0 and math.max(0, s.prevM - back) or -1
    next.lastAt, next.prevLastAt = s.lastAt, s.prevLastAt
  end
  store(key, next, capacity, limit)
  return 1
end
