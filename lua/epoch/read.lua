--[[
epoch/read.lua: read a login's device epoch (its revocation counter), 0 when absent. A present
epoch is kept at least `keep` ms from now (its expiry extended, never shortened): it outlives
every device token that was issued while it was in use.

KEYS   [1] the epoch key (<prefix>epoch:{<login key>})
ARGV   [1] now ('' for Redis TIME)  [2] expiry offset (unused)  [3] keep ms
Return { epoch (an integer ≥ 0), now (the store's clock, ms) }; an error when the key holds
something else
]]
local function main()
  local key, keep = KEYS[1], tonumber(ARGV[3])
  local value = rcall('GET', key)
  if not value then return { 0, now } end
  local epoch = tonumber(value)
  if not epoch or epoch < 0 or epoch ~= math.floor(epoch) then
    return redis.error_reply('redlimit: ' .. key .. ' holds no device epoch')
  end
  -- PTTL is -1 for a key without expiry: it gets one (every key redlimit writes is bounded).
  if rcall('PTTL', key) < keep then rcall('PEXPIRE', key, keep) end
  return { epoch, now }
end
