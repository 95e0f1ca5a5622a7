--[[
lib/prelude.lua: the start of the library (lib/library.lua assembles it; see lib/stores/scripts.ts).
Declares what every operation shares, as upvalues of every script's functions, and `begin`, which
each call runs first: it binds the call's KEYS and ARGV, reads the clock and the arguments every
operation shares (see the frames for the ARGV layout). Redis runs one call at a time, so these
are the current call's until it returns. `customClock`: the limiter's clock, not Redis TIME, gives
`now`; Redis still expires keys in real time, so expiries are shifted by `offset` (which differs
between processes) and nothing may be recognised by its exact expiry.

Everything else the scripts define (models, helpers) is built once, when the library is loaded,
not on every call.
]]
local KEYS, ARGV, rcall
local customClock, now, offset, cost, spendId
-- Set by lib/refund-frame.lua: the units the spend was charged when it was made (`reserved`) and
-- how many of its units stay below those a refund gives back or an adjustment adds (`keep`).
local reserved, keep
-- Set by lib/stack-frame.lua when this run is one slot group of a cross-slot spend on Cluster,
-- which may be compensated (see lib/bucket.lua).
local compensable

-- math.floor, read on the first call (a library being loaded may not read `math`).
local floor

-- Small whole numbers as ARGV strings, read without tonumber (which costs two strtod in Lua 5.1).
-- And their text (a number passed to redis.call is printed with snprintf).
local SMALL, TEXT = {}, {}
for v = 0, 256 do SMALL[v .. ''], TEXT[v] = v, v .. '' end -- (no tostring while the library loads)

local function number(text)
  return SMALL[text] or tonumber(text)
end

local function begin(keys, args)
  KEYS, ARGV, rcall = keys, args, redis.call
  if not floor then floor = math.floor end
  customClock = args[1] ~= ''
  if not customClock then
    local t = rcall('TIME')
    now = t[1] * 1000 + floor(t[2] / 1000) -- (arithmetic reads each string once; tonumber twice)
  else
    now = tonumber(args[1])
  end
  offset = number(args[2])
  cost = number(args[3])
  spendId = args[5]
  compensable = false
end
