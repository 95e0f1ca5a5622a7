--[[
reset/reset.lua: remove a policy's state and lockouts for some caller keys (an admin unlock), and move the
reset mark in each caller key's ledger (see lib/refund-frame.lua), so receipts of spends made
before it refund nothing. The mark only grows: max(previous mark + 1, now), so every reset has a
mark of its own (two in one millisecond too) and a ledger that expired and came back starts above
every mark it had (its last reset is more than a lifetime in the past).

KEYS   the state keys (K caller keys × L limits), then one ledger per caller key: KEYS[K*L + k],
       then one lockout state per caller key: KEYS[K*(L+1) + k] (lifted whatever the policy says)
ARGV   [1] now ('' for Redis TIME)  [2] expiry offset  [3]-[5] unused
       [6] the policy's lifetime ms (its longest state)  [7] L
Return number of state and lockout keys removed
]]

local function main()
  local lifetime = tonumber(ARGV[6])
  local limitCount = tonumber(ARGV[7])
  local keyCount = #KEYS / (limitCount + 2)
  local removed = 0

  for k = 1, keyCount do
    local ledger = KEYS[keyCount * limitCount + k]
    -- The ledger outlives every state it wipes (a clock behind can have written later expiries).
    local expireAt = math.max(now + lifetime + offset, rcall('PEXPIRETIME', ledger))
    for l = 1, limitCount do
      local key = KEYS[(k - 1) * limitCount + l]
      expireAt = math.max(expireAt, rcall('PEXPIRETIME', key))
      removed = removed + rcall('DEL', key)
    end
    removed = removed + rcall('DEL', KEYS[keyCount * (limitCount + 1) + k]) -- its lockout
    local mark = math.max((tonumber(rcall('ZSCORE', ledger, 'reset')) or 0) + 1, now)
    rcall('ZADD', ledger, mark, 'reset')
    rcall('PEXPIREAT', ledger, expireAt)
  end

  return removed
end
