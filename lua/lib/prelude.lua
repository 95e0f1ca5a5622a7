--[[
lib/prelude.lua: included at the top of every script. Reads the clock and the arguments every
operation shares (see the frames for the ARGV layout). `customClock`: the limiter's clock, not
Redis TIME, gives `now`; Redis still expires keys in real time, so expiries are shifted by `offset`
(which differs between processes) and nothing may be recognised by its exact expiry.
]]
local rcall = redis.call

local customClock = ARGV[1] ~= ''
local now
if not customClock then
  local t = rcall('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[1])
end
local offset = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local spendId = ARGV[5]
-- Set by lib/stack-frame.lua when this run is one slot group of a cross-slot spend on Cluster,
-- which may be compensated (see lib/bucket.lua).
local compensable = false
