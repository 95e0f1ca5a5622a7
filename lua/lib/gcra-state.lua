--[[
lib/gcra-state.lua: gcra state as "tat:rem:busyAge:m:lastAge:prevM:prevLastAge" and, while there
are any, ":pending" (lib/pending.lua): the theoretical arrival time as whole ms plus a remainder in
1/limit ms (so 7000 ms / 3 never drifts); the busy period's start and the latest spends as ages
before the tat (-1 for "none"); m and prevM. Converted to and from the state table that
lib/bucket.lua works on, whose backlog is (tat - now) * limit + rem. Ages are clamped at 0, so a
Redis clock that steps back cannot leave state that no longer parses.

Read as lib/token-bucket-state.lua reads its state: one match of the fields as encode writes them,
each converted once, anything else by the general reading (readAny); a decision skips prevM and
prevLastAt and reads into a table it keeps.
]]
--#include lib/pending.lua


-- Any text the fields' pattern does not take: split at ':' and tonumber, as it always was read.
local function readAny(raw, capacity, limit)
  local f = {}
  for n in string.gmatch(raw, '[^:]+') do f[#f + 1] = n end
  if #f ~= 7 and #f ~= 8 then return nil end
  for i = 1, 7 do f[i] = tonumber(f[i]) if not f[i] then return nil end end
  local tat = f[1]
  local function before(age) if age < 0 then return -1 end return tat - age end
  return {
    b = (tat - now) * limit + f[2],
    busyStart = before(f[3]), m = f[4], lastAt = before(f[5]), prevM = f[6], prevLastAt = before(f[7]),
    pending = readPending(f[8], tat),
  }
end

-- The state, or nil when there is none or the bucket is full again (b <= 0: nothing to read):
-- written into `into` without prevM and prevLastAt, or, without `into`, a new table with them.
local function decode(raw, capacity, limit, into)
  local ok, tat, rem, busyAge, m, lastAge, prevM, prevLastAge, pending = stateFields(raw, into)
  if not ok then return readAny(raw, capacity, limit) end
  tat = tat - 0
  local b = (tat - now) * limit + rem
  if b <= 0 then return nil end
  return stateFrom(into, b, tat, busyAge, m, lastAge, prevM, prevLastAge, pending)
end

local function encode(s, capacity, limit)
  local b = s.b
  local ahead = math.floor(b / limit)
  if ahead * limit > b then ahead = ahead - 1 end
  local tat = now + ahead
  local busy, last, prevLast = s.busyStart, s.lastAt, s.prevLastAt
  -- Ages before the tat: -1 for none, else clamped at 0.
  if busy < 0 then busy = -1 elseif busy < tat then busy = tat - busy else busy = 0 end
  if last < 0 then last = -1 elseif last < tat then last = tat - last else last = 0 end
  if prevLast < 0 then prevLast = -1 elseif prevLast < tat then prevLast = tat - prevLast else prevLast = 0 end
  local text = string.format('%d:%d:%d:%d:%d:%d:%d', tat, b - ahead * limit, busy, s.m, last, s.prevM, prevLast)
  if #s.pending == 0 then return text end
  return text .. writePending(s.pending, tat)
end
