--[[
lib/gcra-state.lua: gcra state as "tat:rem:busyAge:m:lastAge:prevM:prevLastAge" and, while there
are any, ":pending" (lib/pending.lua): the theoretical arrival time as whole ms plus a remainder in
1/limit ms (so 7000 ms / 3 never drifts); the busy period's start and the latest spends as ages
before the tat (-1 for "none"); m and prevM. Converted to and from the state table that
lib/bucket.lua works on, whose backlog is (tat - now) * limit + rem. Ages are clamped at 0, so a
Redis clock that steps back cannot leave state that no longer parses.
]]
--#include lib/pending.lua

local function decode(raw, capacity, limit)
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

local function encode(s, capacity, limit)
  local ahead = math.floor(s.b / limit)
  if ahead * limit > s.b then ahead = ahead - 1 end
  local tat = now + ahead
  local function age(t) if t < 0 then return -1 end return math.max(0, tat - t) end
  return string.format('%d:%d:%d:%d:%d:%d:%d',
    tat, s.b - ahead * limit, age(s.busyStart), s.m, age(s.lastAt), s.prevM, age(s.prevLastAt))
    .. writePending(s.pending, tat)
end
