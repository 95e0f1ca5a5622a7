--[[
board/audit.lua: adds one entry to the ops board's audit (a capped stream, kept `keep` ms after
its last entry). An `unlock` also takes the key's lockout of that policy off the board's lockout
list (the lockout itself is gone: the limiter reset it) and remembers the unlock for `memory` ms,
so that a recorder's flush of what it saw before the unlock does not list it again.

KEYS   [1] the audit stream  [2] the lockout list  [3] when each lockout was first seen
       [4] recent unlocks (zset: member → when)
ARGV   [1] now ('' for Redis TIME)  [2] expiry offset (unused)  [3] unused  [4] keep ms
       [5] max entries  [6] the lockout's member ('' for none)  [7] memory ms
       [8…] field, value pairs
Return the entry's time (the store's clock, ms)
]]
local function main()
  local entry = { 'XADD', KEYS[1], 'MAXLEN', '~', ARGV[5], '*', 'at', now }
  for j = 8, #ARGV do entry[#entry + 1] = ARGV[j] end
  rcall(unpack(entry))
  rcall('PEXPIRE', KEYS[1], tonumber(ARGV[4]))
  if ARGV[6] ~= '' then
    local memory = tonumber(ARGV[7])
    rcall('ZREM', KEYS[2], ARGV[6])
    rcall('HDEL', KEYS[3], ARGV[6])
    rcall('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - memory)
    rcall('ZADD', KEYS[4], now, ARGV[6])
    rcall('PEXPIRE', KEYS[4], memory)
  end
  return now
end
