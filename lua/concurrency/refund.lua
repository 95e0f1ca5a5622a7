--[[
concurrency/refund.lua: release one lease: remove exactly its members (one per unit), on every key
and limit, whatever their score (an extended lease was scored again). Removing them twice removes
nothing, so no ledger is needed and none is written; a lease that expired, or a key reset since,
has nothing left to remove. A Cluster compensation releases the same way.

KEYS   the state keys as in consume-frame.lua (K caller keys × L limits), then one ledger per caller
       key (not used)
ARGV   as lib/refund-frame.lua: [3] units leased, [4] 'outcome:<deadline>/<place>/<field>' for a
       lease whose reply was lost (the outcome hash is one more key, last; see lib/outcome.lua),
       [5] spend id, [7] L (the rest is not used)
Return number of members removed; in outcome mode -1 before the deadline, -2 when it has no entry
]]
--#include lib/outcome.lua

local function main()
  if spendId == '' then return 0 end
  local limitCount = tonumber(ARGV[7])
  local keys, ran = #KEYS, true
  local mode = string.sub(ARGV[4], 1, 8)
  if mode == 'outcome:' then
    -- A lease whose reply was lost (see lib/refund-frame.lua's outcome mode): released as any
    -- other once it can no longer be taken; its entry in its run's field of the outcome hash (the
    -- last key) goes with it.
    local deadline, place, field = string.match(ARGV[4], '^outcome:([^/]*)/(%d+)/(.+)$')
    if not field then return redis.error_reply('redlimit: not an outcome settlement: ' .. ARGV[4]) end
    if deadline ~= '' and now <= deadline + 0 then return -1 end
    keys = keys - 1
    local hash = KEYS[#KEYS]
    place = tonumber(place)
    local value = rcall('HGET', hash, field)
    ran = value and readOutcome(value, place, 0, {}) and true or false
    if ran then
      local rest = withoutOutcome(value, place)
      if rest then rcall('HSET', hash, field, rest) else rcall('HDEL', hash, field) end
    end
  end
  local states = keys / (limitCount + 1) * limitCount
  local members = {}
  if cost == 1 then
    members[1] = spendId
  else
    for n = 1, cost do members[n] = spendId .. '.' .. n end
  end
  local released = 0
  for i = 1, states do
    for first = 1, #members, 100 do
      released = released + rcall('ZREM', KEYS[i], unpack(members, first, math.min(#members, first + 99)))
    end
  end
  if not ran then return -2 end -- no marker: it never ran (releasing found nothing)
  return released
end
