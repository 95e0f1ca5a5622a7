--[[
epoch/bump.lua: move a login's device epoch (its revocation counter) on by one, creating it at 1,
and keep it at least `keep` ms from now (its expiry extended, never shortened). Every device
token issued under an earlier epoch is then no longer trusted.

KEYS   [1] the epoch key (<prefix>epoch:{<login key>})
ARGV   [1] now ('' for Redis TIME; unused)  [2] expiry offset (unused)  [3] keep ms
Return the new epoch (≥ 1); an error when the key holds something else
]]
local function main()
  local key, keep = KEYS[1], tonumber(ARGV[3])
  local epoch = rcall('INCR', key)
  -- PTTL is -1 for a key without expiry: it gets one (every key redlimit writes is bounded).
  if rcall('PTTL', key) < keep then rcall('PEXPIRE', key, keep) end
  return epoch
end
