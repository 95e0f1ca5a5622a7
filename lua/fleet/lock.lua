--[[
fleet/lock.lua: a lockout the memory fallback started while Redis failed, written into Redis when
it is back (see lib/stores/redis-fleet.ts), so a caller locked out during the outage stays locked
out after it. The state is the lockout state of lib/decide.lua ('until:duration:forgetAt', kept
until forgetAt). Nothing is written when the lockout is over, when Redis holds one that ends as
late or later, or when the key was reset (an unlock: its ledger's reset mark, see reset/reset.lua)
at or after the instant the lockout started.

KEYS   [1] the caller key's lockout state (<prefix>{<key>}:<policy>:b)  [2] its ledger
ARGV   [1] now ('' for Redis TIME)  [2] expiry offset  [3] until  [4] duration  [5] forgetAt
       [6] when the lockout started (the fallback's clock)
Return 1 when it wrote the lockout, else 0
]]
local function main()
  local key = KEYS[1]
  local ends, duration, forgetAt = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
  if ends <= now then return 0 end
  local mark = tonumber(rcall('ZSCORE', KEYS[2], 'reset'))
  if mark and mark >= tonumber(ARGV[6]) then return 0 end -- unlocked since it started
  local raw = rcall('GET', key)
  if raw then
    local held = tonumber(string.match(raw, '^(%d+):'))
    if held and held >= ends then return 0 end
  end
  rcall('SET', key, string.format('%d:%d:%d', ends, duration, forgetAt), 'PXAT', forgetAt + offset)
  return 1
end
