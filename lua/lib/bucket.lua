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
give back, and then m and lastAt are restored as if it had never happened; and min(cost, b, m) for
an earlier spend, never more than removing it would give back (possibly less).

An adjustment down is a refund of the difference (the spend stays, so a latest spend keeps its
place in history); an adjustment up adds to the backlog without a limit check, so it can pass the
capacity: a debt that later decisions wait out exactly (see `charge`); nothing once the bucket has
been full since the spend, as for a refund.

Compensations (Cluster) are exact whatever is spent in between. Removing spend V from history gives
back min(cost, b, the lowest backlog at any point after V): every later point drops by as much,
never below zero. A slot group of a cross-slot spend (`compensable`) therefore stays `pending` in
the state until its call's deadline + PENDING_GRACE: {id, at, seg, expires}, oldest first, where
`seg` is the lowest backlog just before any spend after that entry and up to the next entry (-1:
none yet). The lowest point after entry k is the least `seg` from k on, and b; removing k lowers
those segments by what it gave back and merges its own into the previous one, so the others stay
exact too. At most PENDING_CAP entries (the oldest goes first); a compensation whose entry is gone
(more than PENDING_CAP cross-slot spends pending on one key, or a reply later than the grace), or
after a refund of a later spend lowered its segment by a bound, falls back to the refund rule:
never more than exact.

Requires decode(raw, capacity, limit, into) -> state, or nil for none or a full bucket (`into`: a
table to fill for a decision, which reads no prevM or prevLastAt, so they are left out; nil: a new
table with every field, for a refund or an adjustment)  and  encode(state, capacity, limit).
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

local EMPTY = {
  b = 0, busyStart = -1, m = -1, lastAt = -1, prevM = -1, prevLastAt = -1, pending = NO_PENDING,
}
local PENDING_CAP = 16
local PENDING_GRACE = 1000 -- ms a compensation may reach Redis after its call's deadline

-- The lower of two segment minimums (-1: none).
local function lowest(a, b)
  if a < 0 then return b end
  if b < 0 or a < b then return a end
  return b
end

-- Removes entry k, its segment merged into the previous one (whose points it continues).
local function removePending(list, k)
  if k > 1 then list[k - 1].seg = lowest(list[k - 1].seg, list[k].seg) end
  table.remove(list, k)
end

-- The entries of state s still open at `now` (a new list; s may be EMPTY).
local function openPending(s)
  local list = {}
  for _, e in ipairs(s.pending) do list[#list + 1] = e end
  local k = 1
  while k <= #list do
    if list[k].expires < now then removePending(list, k) else k = k + 1 end
  end
  return list
end

-- Raises the segments wholly after a spend at `at` by `extra` (one it spans keeps a bound).
local function raiseAfter(list, at, extra)
  for k = 1, #list do
    if list[k].at >= at and list[k].seg >= 0 then list[k].seg = list[k].seg + extra end
  end
end

-- Lowers the segments a spend at `at` precedes (wholly, or in part: then a bound) by `back`.
local function lowerAfter(list, at, back)
  for k = 1, #list do
    local nextAt = list[k + 1] and list[k + 1].at
    if (not nextAt or nextAt >= at) and list[k].seg >= 0 then
      list[k].seg = math.max(0, list[k].seg - back)
    end
  end
end

local function load(key, limit, window, burst, into)
  local capacity = burst * window
  local raw = rcall('GET', key)
  local state = raw and decode(raw, capacity, limit, into)
  if not state or state.b <= 0 then return EMPTY, capacity end -- full: the busy period is over
  return state, capacity -- (a backlog above capacity is a debt: a spend adjusted up)
end

local function store(key, state, capacity, limit)
  if state.b <= 0 then
    rcall('DEL', key)
  else
    rcall('SET', key, encode(state, capacity, limit), 'PXAT', now + ceilDiv(state.b, limit) + offset)
  end
end

local function evaluate(key, limit, window, burst, ev)
  -- The state is read into a table of the evaluation's own (`ev` is reused call after call).
  local own = ev.bucketState
  if not own then
    own = {}
    ev.bucketState = own
  end
  local state, capacity = load(key, limit, window, burst, own)
  local b = state.b
  local units = cost * window
  local fits = b + units <= capacity
  ev.fits, ev.room, ev.seen = fits, floorDiv(capacity - b, window), nil
  ev.wait = fits and 0 or ceilDiv(b + units - capacity, limit)
  ev.state, ev.capacity, ev.units = state, capacity, units
  return ev
end

local function resetIn(ev, spent, key, limit)
  if spent then return ceilDiv(ev.state.b + ev.units, limit) end
  return ceilDiv(ev.state.b, limit)
end

local function commit(key, ev, limit)
  local s = ev.state
  local next -- (every field in the constructor: no table grown field by field)
  if s.b == 0 then
    next = {
      b = ev.units, busyStart = now, m = -1, lastAt = now, prevM = -1, prevLastAt = -1, pending = NO_PENDING,
    }
  else
    next = {
      b = s.b + ev.units,
      -- (a clock behind the period's start: this spend still belongs to the period)
      busyStart = s.busyStart < now and s.busyStart or now,
      m = (s.m < 0 or s.b < s.m) and s.b or s.m,
      lastAt = now, prevM = s.m, prevLastAt = s.lastAt, pending = NO_PENDING,
    }
  end
  local pending = s.pending -- (none once the bucket was full: the period is over)
  if #pending > 0 or compensable then pending = openPending(s) end
  local last = pending[#pending]
  if last then last.seg = lowest(last.seg, s.b) end -- this spend's point, after every entry
  if compensable then
    local deadline = tonumber(ARGV[6]) or now
    pending[#pending + 1] = { id = spendId, at = now, seg = -1, expires = deadline + PENDING_GRACE }
    if #pending > PENDING_CAP then removePending(pending, 1) end
  end
  next.pending = pending
  store(key, next, ev.capacity, limit)
end

local function refund(key, limit, window, burst, at)
  local s, capacity = load(key, limit, window, burst)
  if s.b == 0 or at < s.busyStart then return 0 end
  local back = math.min(cost * window, s.b)
  local latest = at == s.lastAt -- (not >=: after the clock stepped back, a later `at` is no proof)
  local pending = openPending(s)
  local entry
  if tonumber(ARGV[6]) < 0 then -- a compensation: its entry knows the lowest point since
    for k, e in ipairs(pending) do if e.id == spendId then entry = k end end
  end
  if entry then
    for k = entry, #pending do back = lowest(back, pending[k].seg) end
  elseif not latest and s.m >= 0 then
    back = math.min(back, s.m)
  end
  if back <= 0 then return 0 end
  if entry then
    -- Exactly the points after it drop; its segment joins the previous one.
    for k = entry, #pending do
      if pending[k].seg >= 0 then pending[k].seg = pending[k].seg - back end
    end
    removePending(pending, entry)
  else
    lowerAfter(pending, at, back)
  end
  local next = { b = s.b - back, busyStart = s.busyStart, pending = pending }
  if latest and keep == 0 then
    -- As if it never happened: the running minimum and latest spend from before it.
    next.m, next.lastAt = s.prevM, s.prevLastAt
    next.prevM, next.prevLastAt = s.prevM, s.prevLastAt
  elseif latest then
    -- Still the latest spend, smaller: the points before it are as they were.
    next.m, next.lastAt, next.prevM, next.prevLastAt = s.m, s.lastAt, s.prevM, s.prevLastAt
  else
    next.m = s.m >= 0 and math.max(0, s.m - back) or -1
    next.prevM = s.prevM >= 0 and math.max(0, s.prevM - back) or -1
    next.lastAt, next.prevLastAt = s.lastAt, s.prevLastAt
  end
  store(key, next, capacity, limit)
  return 1
end

-- Adds `cost` units to the spend at `at`: while the bucket has not been full since, every point
-- after it rises by exactly that (the running minimums stay bounds). Once it has been full since,
-- the spend weighs on nothing, as for a refund: nothing is added.
local function charge(key, limit, window, burst, at)
  local s, capacity = load(key, limit, window, burst)
  local units = cost * window
  if s.b == 0 or at < s.busyStart then
    -- A spend the store never saw (the memory fallback's, charged when the store is back: a
    -- compensation) still weighs what would be left of it had it been made at `at` and drained
    -- since; a spend of the store's own weighs on nothing once the bucket was full since.
    if tonumber(ARGV[6]) >= 0 then return 0 end
    local left = units - (now - at) * limit
    if left <= 0 then return 0 end
    local fresh = s.b == 0
    store(key, {
      b = s.b + left, busyStart = fresh and at or s.busyStart, m = fresh and -1 or s.m,
      lastAt = fresh and at or s.lastAt, prevM = fresh and -1 or s.prevM,
      prevLastAt = fresh and -1 or s.prevLastAt, pending = openPending(s),
    }, capacity, limit)
    return 1
  end
  local pending = openPending(s)
  raiseAfter(pending, at, units)
  store(key, {
    b = s.b + units, busyStart = s.busyStart, m = s.m, lastAt = s.lastAt,
    prevM = s.prevM, prevLastAt = s.prevLastAt, pending = pending,
  }, capacity, limit)
  return 1
end

-- A grant: `cost` tokens back now, never beyond a full bucket (a debt shrinks first). Only the
-- current point drops: the running minimums and pending segments describe points before it and
-- stay as they are (refunds after it are capped by the lower backlog as well).
local function grant(key, limit, window, burst)
  local s, capacity = load(key, limit, window, burst)
  if s.b == 0 then return 0 end
  store(key, {
    b = s.b - math.min(cost * window, s.b), busyStart = s.busyStart, m = s.m, lastAt = s.lastAt,
    prevM = s.prevM, prevLastAt = s.prevLastAt, pending = openPending(s),
  }, capacity, limit)
  return 1
end
