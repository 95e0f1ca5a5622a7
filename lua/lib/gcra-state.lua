--[[
lib/gcra-state.lua: gcra state as "tat:rem:busyStart:m", the theoretical arrival time kept as
whole ms plus a remainder in 1/limit ms (so 7000 ms / 3 never drifts), converted to and from the
backlog that lib/bucket.lua works on: backlog = (tat - now) * limit + rem.
]]
local function decode(raw, capacity, limit)
  local tat, rem, busyStart, m = string.match(raw, '^(%d+):(%d+):(%d+):(%-?%d+)$')
  if not tat then return nil end
  return (tonumber(tat) - now) * limit + tonumber(rem), tonumber(busyStart), tonumber(m)
end

local function encode(b, busyStart, m, capacity, limit)
  local ahead = math.floor(b / limit)
  if ahead * limit > b then ahead = ahead - 1 end
  return string.format('%d:%d:%d:%d', now + ahead, b - ahead * limit, busyStart, m)
end
