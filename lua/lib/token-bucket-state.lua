--[[
lib/token-bucket-state.lua: token-bucket state as "tokens:at:busyAge:m:lastAge": tokens (in units)
at the instant `at`, the busy period's start and the latest spend as ages before `at` (short
numbers), and m; converted to and from the backlog that lib/bucket.lua works on. Ages are clamped at
0: Redis TIME can step back (NTP, a failover to a node whose clock lags), and state must survive it.
]]
local function decode(raw, capacity, limit)
  local tokens, at, busyAge, m, lastAge = string.match(raw, '^(%d+):(%d+):(%-?%d+):(%-?%d+):(%-?%d+)$')
  if not tokens then return nil end
  at = tonumber(at)
  local b = capacity - tonumber(tokens) - (now - at) * limit
  return b, at - tonumber(busyAge), tonumber(m), at - tonumber(lastAge)
end

local function encode(b, busyStart, m, lastAt, capacity)
  return string.format(
    '%d:%d:%d:%d:%d', capacity - b, now, math.max(0, now - busyStart), m, math.max(0, now - lastAt))
end
