--[[
concurrency/extend.lua: renew one lease for another `window` from now, on every key and limit:
each of its members still counting (score in (now - window, now]) is scored `now` (never earlier
than it was). A member that expired or was released is not brought back: its slot may have been
leased to someone else since.

KEYS   as concurrency/refund.lua
ARGV   as lib/refund-frame.lua: [1] now ('' for Redis TIME), [2] expiry offset, [3] units leased,
       [5] spend id, [7] L, then for l = 1..L: [6 + 3l] window ms
Return number of members renewed (K × L × units when the whole lease was still held)
]]
local function main()
  if spendId == '' then return 0 end
  local limitCount = tonumber(ARGV[7])
  local keyCount = #KEYS / (limitCount + 1)
  local renewed = 0
  for k = 1, keyCount do
    for l = 1, limitCount do
      local key = KEYS[(k - 1) * limitCount + l]
      local window = tonumber(ARGV[6 + 3 * l])
      local held = 0
      for n = 1, cost do
        local member = spendId
        if cost > 1 then member = spendId .. '.' .. n end
        local score = tonumber(rcall('ZSCORE', key, member))
        if score and score > now - window then
          rcall('ZADD', key, 'XX', 'GT', now, member)
          held = held + 1
        end
      end
      if held > 0 then
        local expireAt = now + window + offset
        if rcall('PEXPIRETIME', key) < expireAt then rcall('PEXPIREAT', key, expireAt) end
      end
      renewed = renewed + held
    end
  end
  return renewed
end
