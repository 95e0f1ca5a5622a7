--[[
lib/token-bucket-state.lua: token-bucket state as "tokens:at:busyAge:m:lastAge:prevM:prevLastAge"
and, while there are any, ":pending" (lib/pending.lua): tokens (in units) at the instant `at`; the
busy period's start and the latest spends as ages before `at` (short numbers; -1 for "none"); m
and prevM. Converted to and from the state table that lib/bucket.lua works on. Ages are clamped at
0: Redis TIME can step back (NTP, a failover to a node whose clock lags), and state must survive it.
]]
--#include lib/pending.lua

local function decode(raw, capacity, limit)
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

local function encode(s, capacity)
  local function age(t) if t < 0 then return -1 end return math.max(0, now - t) end
  return string.format('%d:%d:%d:%d:%d:%d:%d',
    capacity - s.b, now, age(s.busyStart), s.m, age(s.lastAt), s.prevM, age(s.prevLastAt))
    .. writePending(s.pending, now)
end
