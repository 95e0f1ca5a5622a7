--[[
lib/gcra-state.lua: gcra state as "tat:rem:busyAge:m:lastAge": the theoretical arrival time as whole
ms plus a remainder in 1/limit ms (so 7000 ms / 3 never drifts), the busy period's start and the
latest spend as ages before the tat, and m; converted to and from the backlog that lib/bucket.lua
works on: backlog = (tat - now) * limit + rem. Ages are clamped at 0, so a Redis clock that steps
back cannot leave state that no longer parses.
]]
local function decode(raw, capacity, limit)
  local tat, rem, busyAge, m, lastAge = string.match(raw, '^(%d+):(%d+):(%-?%d+):(%-?%d+):(%-?%d+)$')
  if not tat then return nil end
  tat = tonumber(tat)
  return (tat - now) * limit + tonumber(rem), tat - tonumber(busyAge), tonumber(m), tat - tonumber(lastAge)
end

local function encode(b, busyStart, m, lastAt, capacity, limit)
  local ahead = math.floor(b / limit)
  if ahead * limit > b then ahead = ahead - 1 end
  local tat = now + ahead
  return string.format(
    '%d:%d:%d:%d:%d', tat, b - ahead * limit, math.max(0, tat - busyStart), m, math.max(0, tat - lastAt))
end
