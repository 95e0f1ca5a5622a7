--[[
lib/ledger.lua: writes to a caller key's refund ledger (a sorted set in the key's hash tag; what it
holds and how refunds read it: see lib/refund-frame.lua). Included by lib/refund-frame.lua (refunds
record ids) and lib/decide.lua (a spend to be settled is registered as it is made).

Members, each scored by the spend's instant: "<id>" refunded; "<id>=<cost>" adjusted to that cost;
"+<id>" a spend registered as it was made (begin()/attempt(): it will be settled), not settled yet;
"+<id>=<cost>" such a spend adjusted (still owed its refund). Plus the markers `reset`, `floor`
and `life`. The cap counts every id; trimming takes the oldest ids that are not registered ("+…")
and raises the floor to the latest of them. A registered entry leaves only when its spend is
refunded (or adjusted to 0), when it is older than the ledger's lifetime, or with the ledger:
each one is an unsettled spend that still holds budget, so how many there are is bounded by the
budget, never by how many refunds the caller makes.
]]
-- With the three markers and the id added before trimming, at most 128 entries: Redis keeps it a
-- compact listpack (a zset never converts back once it has held more). Registered entries count
-- too; only more of them than the cap (that many unsettled spends) can take it past.
local LEDGER_CAP = 124

local MARKERS = { reset = true, floor = true, life = true }

-- Whether a member is a registered spend ("+<id>" or "+<id>=<cost>"): never trimmed by the cap.
local function registered(member)
  return string.byte(member, 1) == 43 -- '+'
end

-- Takes the `extra` oldest trimmable ids off; the floor rises to the latest of them. Markers and
-- registered spends may sit among the oldest: the range read grows until enough are found.
local function trimOldest(ledger, extra)
  local span = extra + 3
  while true do
    local oldest = rcall('ZRANGE', ledger, 0, span - 1, 'WITHSCORES')
    local doomed, floor = {}, nil
    for i = 1, #oldest, 2 do
      local m = oldest[i]
      if #doomed < extra and not MARKERS[m] and not registered(m) then
        doomed[#doomed + 1], floor = m, oldest[i + 1]
      end
    end
    if #doomed == extra or #oldest < 2 * span then
      if floor then
        rcall('ZREM', ledger, unpack(doomed))
        rcall('ZADD', ledger, 'GT', floor, 'floor')
      end
      return
    end
    span = span * 2
  end
end

-- After `member` was written at `at`: prunes ids past the longest lifetime the ledger was written
-- with, trims to the cap, and keeps the ledger as long as the spend can weigh.
local function tidy(ledger, at, lifetime)
  local markers = rcall('ZMSCORE', ledger, 'reset', 'floor', 'life')
  -- Ids are pruned by the longest lifetime the ledger was ever written with, never by the one a
  -- receipt names: a receipt of an older configuration with shorter windows (or an edited one)
  -- would otherwise forget ids that still count, and their copies would refund again.
  local life = math.max(lifetime, tonumber(markers[3]) or 0)
  rcall('ZREMRANGEBYSCORE', ledger, '-inf', '(' .. string.format('%d', now - life))
  -- The markers are not ids: pruning old ids never takes them (a reset's mark only grows).
  if markers[1] then rcall('ZADD', ledger, markers[1], 'reset') end
  if markers[2] then rcall('ZADD', ledger, markers[2], 'floor') end
  rcall('ZADD', ledger, life, 'life')
  local extra = rcall('ZCARD', ledger) - LEDGER_CAP - 1 - (markers[1] and 1 or 0) - (markers[2] and 1 or 0)
  if extra > 0 then trimOldest(ledger, extra) end
  -- As long as the spend can weigh (its `at` may be ahead of a clock that stepped back), never
  -- shorter than before.
  local expireAt = math.max(now, at) + life + offset
  if rcall('PEXPIRETIME', ledger) < expireAt then rcall('PEXPIREAT', ledger, expireAt) end
end

local function remember(ledger, at, lifetime, member)
  rcall('ZADD', ledger, at, member)
  tidy(ledger, at, lifetime)
end

--[[
Registers the spend just made (`spendId`, at `now`) in the ledgers KEYS[ledgerBase + k] of its K
caller keys, so that its first refund or adjustment is honoured whatever the ledger has trimmed
since. Out of memory, Redis refuses the write: the spend stands, unregistered (its refund is then
judged by the floor, as a plain consume's).
]]
local function register(ledgerBase, keyCount, lifetime)
  for k = 1, keyCount do
    local ledger = KEYS[ledgerBase + k]
    local added = redis.pcall('ZADD', ledger, now, '+' .. spendId)
    if type(added) == 'table' and added.err then return end
    tidy(ledger, now, lifetime)
  end
end
