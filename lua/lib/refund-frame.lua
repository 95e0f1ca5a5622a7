--[[
lib/refund-frame.lua: the part of every refund script that is the same for all algorithms.
Included at the end of lua/<algorithm>/refund.lua, which defines:

  refund(key, limit, window, burst, at) -> 1 if it gave anything back, else 0
      gives back `cost` units charged at instant `at` (ARGV[4]) by spend `spendId` (ARGV[5]),
      to the window/bucket they were taken from; never below zero, never creating a key

Each caller key also has a ledger (a hash, same hash tag): the ids of spends already refunded, and
`reset`, the instant of the last reset. A spend is refunded at most once per caller key, however
many copies of its receipt come back, and never after a reset wiped it (its units would come off
later spends). The ledger is written only when something was given back: a refund with nothing
left to return writes nothing at all.

KEYS   the state keys as in consume-frame.lua (K caller keys × L limits), then one ledger per
       caller key: KEYS[K*L + k]
ARGV   [1] now ('' for Redis TIME)  [2] expiry offset  [3] cost that was charged
       [4] at: the spend's `now`    [5] spend id        [6] ledger lifetime ms (the longest state)
       [7] L, then for l = 1..L: [5 + 3l] limit, [6 + 3l] window ms, [7 + 3l] burst
Return number of (key, limit) states that gave something back
]]
local at = tonumber(ARGV[4])
local ledgerTtl = tonumber(ARGV[6])
local limitCount = tonumber(ARGV[7])
local keyCount = #KEYS / (limitCount + 1)
local reduced = 0

for k = 1, keyCount do
  local first = (k - 1) * limitCount
  local ledger = KEYS[keyCount * limitCount + k]
  local resetAt = tonumber(rcall('HGET', ledger, 'reset'))
  local due = not (resetAt and at <= resetAt)
  if due and spendId ~= '' then due = rcall('HEXISTS', ledger, spendId) == 0 end
  if due then
    local given = 0
    for l = 1, limitCount do
      local limit, window, burst = tonumber(ARGV[5 + 3 * l]), tonumber(ARGV[6 + 3 * l]), tonumber(ARGV[7 + 3 * l])
      given = given + refund(KEYS[first + l], limit, window, burst, at)
    end
    if given > 0 and spendId ~= '' then
      rcall('HSET', ledger, spendId, 1)
      rcall('PEXPIRE', ledger, ledgerTtl)
    end
    reduced = reduced + given
  end
end

return reduced
