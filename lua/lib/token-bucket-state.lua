--[[
lib/token-bucket-state.lua: token-bucket state as "tokens:at:busyStart:m" (tokens in units, at the
instant `at`), converted to and from the backlog that lib/bucket.lua works on.
]]
local function decode(raw, capacity, limit)
  local tokens, at, busyStart, m = string.match(raw, '^(%d+):(%d+):(%d+):(%-?%d+)$')
  if not tokens then return nil end
  local b = capacity - tonumber(tokens) - (now - tonumber(at)) * limit
  return b, tonumber(busyStart), tonumber(m)
end

local function encode(b, busyStart, m, capacity)
  return string.format('%d:%d:%d:%d', capacity - b, now, busyStart, m)
end
