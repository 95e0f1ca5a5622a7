--[[
sliding-window/refund.lua: give back what one spend took, to the window it was taken from.

The spend at ARGV[3] was charged to window wc = floor(at / window). If the stored state's current
window is wc, the units come off cur; if it has moved on to wc + 1, they come off prev (wc's count,
now weighted); otherwise wc no longer weighs on anything and the refund does nothing. The expiry is
kept, counts never go below zero, and no key is created.

KEYS   as in consume.lua: KEYS[(k-1)*L + l] is caller key k under limit l
ARGV   [1] expiry offset (unused: the expiry is kept)
       [2] cost that was charged
       [3] at: the spend's `now`
       [4] L: number of limits, then for l = 1..L: [3 + 2l] limit, [4 + 2l] window ms
Return number of counters reduced
]]
local rcall = redis.call

local cost = tonumber(ARGV[2])
local at = tonumber(ARGV[3])
local limitCount = tonumber(ARGV[4])
local keyCount = #KEYS / limitCount
local reduced = 0

for l = 1, limitCount do
  local window = tonumber(ARGV[4 + 2 * l])
  local charged = math.floor(at / window)
  for k = 1, keyCount do
    local key = KEYS[(k - 1) * limitCount + l]
    local raw = rcall('GET', key)
    if raw then
      local sw, cur, prev = string.match(raw, '^(%d+):(%d+):(%d+)$')
      sw, cur, prev = tonumber(sw), tonumber(cur), tonumber(prev)
      if sw == charged and cur > 0 then
        cur = cur - math.min(cost, cur)
      elseif sw == charged + 1 and prev > 0 then
        prev = prev - math.min(cost, prev)
      else
        sw = nil
      end
      if sw then
        reduced = reduced + 1
        if cur == 0 and prev == 0 then
          rcall('DEL', key)
        else
          rcall('SET', key, string.format('%d:%d:%d', sw, cur, prev), 'KEEPTTL')
        end
      end
    end
  end
end

return reduced
