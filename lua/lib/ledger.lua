--[[
lib/ledger.lua: writes to a caller key's refund ledger (a sorted set in the key's hash tag; what it
holds and how refunds read it: see lib/refund-frame.lua). Included by lib/refund-frame.lua (refunds
record ids) and lib/decide.lua (a spend to be settled is registered as it is made).

Members: "<id>" refunded and "<id>=<cost>" adjusted to that cost, scored by the spend's instant
`at` (≥ 0); "+<id>" a spend registered as it was made (begin()/attempt(): it will be settled),
not settled yet, and "+<id>=<cost>" such a spend adjusted (still owed its refund), scored by
-(at + 1), below every id and marker, so that reading the oldest ids never walks over
registrations; plus the markers `reset`, `floor` and `life` (positive scores). A registration
leaves when its spend is refunded (or adjusted to 0), when it is older than the ledger's lifetime,
or with the ledger.

The cap counts every member but the markers. Over it, settled ids go first, oldest first, and the
floor rises to the latest of them; registrations go only when more of them than the cap are
unsettled on the key, oldest first. A registration never adjusted leaves without raising the
floor: its spend was neither refunded nor adjusted, so judged by the floor alone its refund can
be lost, never repeated nor mis-sized; an adjusted one raises it (its refund must give back the
new cost or nothing).
]]
-- With the three markers and the member added before trimming, at most 128 entries: Redis keeps
-- it a compact listpack (a zset never converts back once it has held more).
local LEDGER_CAP = 124

local MARKERS = { reset = true, floor = true, life = true }

-- Whether a member is a registered spend ("+<id>" or "+<id>=<cost>").
local function registered(member)
  return string.byte(member, 1) == 43 -- '+'
end

-- The score of a member for a spend at `at`, as a ZADD argument.
local function scoreOf(member, at)
  return string.format('%d', registered(member) and -(at + 1) or at)
end

-- Takes `extra` members off a ledger over its cap (see above for which, and the floor).
local function trimOldest(ledger, extra)
  -- The oldest ids: the markers may sit among them (`life` below every id), three at most.
  local oldest = rcall('ZRANGE', ledger, 0, '+inf', 'BYSCORE', 'LIMIT', 0, extra + 3, 'WITHSCORES')
  local doomed, floor = {}, nil
  for i = 1, #oldest, 2 do
    if #doomed == extra then break end
    if not MARKERS[oldest[i]] then doomed[#doomed + 1], floor = oldest[i], oldest[i + 1] end
  end
  local left = extra - #doomed
  if left > 0 then
    -- More registrations than the cap: the oldest go (the highest scores, read from -1 down).
    local last = rcall('ZRANGE', ledger, -1, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, left, 'WITHSCORES')
    for i = 1, #last, 2 do
      doomed[#doomed + 1] = last[i]
      local at = -tonumber(last[i + 1]) - 1
      if string.find(last[i], '=', 1, true) and (not floor or at > tonumber(floor)) then
        floor = string.format('%d', at)
      end
    end
  end
  if #doomed > 0 then rcall('ZREM', ledger, unpack(doomed)) end
  if floor then rcall('ZADD', ledger, 'GT', floor, 'floor') end
end

-- After a member was written for a spend at `at`: prunes members past the longest lifetime the
-- ledger was written with, trims to the cap, and keeps the ledger as long as the spend can weigh.
local function tidy(ledger, at, lifetime)
  local markers = rcall('ZMSCORE', ledger, 'reset', 'floor', 'life')
  -- Ids are pruned by the longest lifetime the ledger was ever written with, never by the one a
  -- receipt names: a receipt of an older configuration with shorter windows (or an edited one)
  -- would otherwise forget ids that still count, and their copies would refund again.
  local written = tonumber(markers[3])
  local life = math.max(lifetime, written or 0)
  local since = now - life -- members of spends before it go
  -- Ids [0, since) and registrations (-(since + 1), -1] in one range: no score lies between -1
  -- and 0 (scores are whole), and none is taken when since <= 0.
  rcall('ZREMRANGEBYSCORE', ledger, '(' .. string.format('%d', -(since + 1)), '(' .. string.format('%d', since))
  -- The markers are not ids: pruning old ids never takes them (a reset's mark only grows), so
  -- those it took are put back.
  if markers[1] and tonumber(markers[1]) < since then rcall('ZADD', ledger, markers[1], 'reset') end
  if markers[2] and tonumber(markers[2]) < since then rcall('ZADD', ledger, markers[2], 'floor') end
  if written ~= life or life < since then rcall('ZADD', ledger, life, 'life') end
  local extra = rcall('ZCARD', ledger) - LEDGER_CAP - 1 - (markers[1] and 1 or 0) - (markers[2] and 1 or 0)
  if extra > 0 then trimOldest(ledger, extra) end
  -- As long as the spend can weigh (its `at` may be ahead of a clock that stepped back), never
  -- shorter than before. A ledger that held `life` was given an expiry by the tidy that wrote it
  -- (a key without one would never take GT's); a new one (or one only a reset wrote) is read.
  local expireAt = math.max(now, at) + life + offset
  if written then
    rcall('PEXPIREAT', ledger, expireAt, 'GT')
  elseif rcall('PEXPIRETIME', ledger) < expireAt then
    rcall('PEXPIREAT', ledger, expireAt)
  end
end

local function remember(ledger, at, lifetime, member)
  rcall('ZADD', ledger, scoreOf(member, at), member)
  tidy(ledger, at, lifetime)
end

--[[
Registers the spend just made (`spendId`, at `now`) in the ledgers KEYS[ledgerBase + k] of its K
caller keys, so that its first refund or adjustment is honoured whatever the ledger has trimmed
since. Out of memory, Redis refuses the write: the spend stands, unregistered (its refund is then
judged by the floor, as a plain consume's).
]]
local function register(ledgerBase, keyCount, lifetime)
  local member = '+' .. spendId
  for k = 1, keyCount do
    local ledger = KEYS[ledgerBase + k]
    local added = redis.pcall('ZADD', ledger, scoreOf(member, now), member)
    if type(added) == 'table' and added.err then return end
    tidy(ledger, now, lifetime)
  end
end
