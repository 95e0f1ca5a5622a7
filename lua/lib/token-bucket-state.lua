--[[
lib/token-bucket-state.lua: token-bucket state as "tokens:at:busyAge:m:lastAge:prevM:prevLastAge"
and, while there are any, ":pending" (lib/pending.lua): tokens (in units) at the instant `at`; the
busy period's start and the latest spends as ages before `at` (short numbers; -1 for "none"); m
and prevM. Converted to and from the state table that lib/bucket.lua works on. Ages are clamped at
0: Redis TIME can step back (NTP, a failover to a node whose clock lags), and state must survive it.

Every decision on a caller whose bucket is not yet full again reads this, so it is read with one
match of the fields as encode writes them (whole numbers), each converted once (`x - 0`, which
keeps a -0 as tonumber does; Lua 5.1's tonumber converts twice); anything else takes the general
reading (readAny), so state reads as it always has. A decision never reads prevM and prevLastAt:
it skips them, and reads into a table it keeps from call to call (see `decode`).
]]
--#include lib/pending.lua


-- Any text the fields' pattern does not take: split at ':' and tonumber, as it always was read.
local function readAny(raw, capacity, limit)
  local f = {}
  for n in string.gmatch(raw, '[^:]+') do f[#f + 1] = n end
  if #f ~= 7 and #f ~= 8 then return nil end
  for i = 1, 7 do f[i] = tonumber(f[i]) if not f[i] then return nil end end
  local at = f[2]
  local function before(age) if age < 0 then return -1 end return at - age end
  return {
    b = capacity - f[1] - (now - at) * limit,
    busyStart = before(f[3]), m = f[4], lastAt = before(f[5]), prevM = f[6], prevLastAt = before(f[7]),
    pending = readPending(f[8], at),
  }
end

-- The state, or nil when there is none or the bucket is full again (b <= 0: nothing to read):
-- written into `into` without prevM and prevLastAt, or, without `into`, a new table with them.
local function decode(raw, capacity, limit, into)
  local ok, tokens, at, busyAge, m, lastAge, prevM, prevLastAge, pending = stateFields(raw, into)
  if not ok then return readAny(raw, capacity, limit) end
  at = at - 0
  local b = capacity - tokens - (now - at) * limit
  if b <= 0 then return nil end
  return stateFrom(into, b, at, busyAge, m, lastAge, prevM, prevLastAge, pending)
end

local function encode(s, capacity)
  local busy, last, prevLast = s.busyStart, s.lastAt, s.prevLastAt
  -- Ages before now: -1 for none, else clamped at 0.
  if busy < 0 then busy = -1 elseif busy < now then busy = now - busy else busy = 0 end
  if last < 0 then last = -1 elseif last < now then last = now - last else last = 0 end
  if prevLast < 0 then prevLast = -1 elseif prevLast < now then prevLast = now - prevLast else prevLast = 0 end
  local text = string.format('%d:%d:%d:%d:%d:%d:%d', capacity - s.b, now, busy, s.m, last, s.prevM, prevLast)
  if #s.pending == 0 then return text end
  return text .. writePending(s.pending, now)
end
