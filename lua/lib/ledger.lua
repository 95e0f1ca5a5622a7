--[[
lib/ledger.lua: writes to a caller key's refund ledger (a sorted set in the key's hash tag; what it
holds and how refunds read it: see lib/refund-frame.lua). Included by lib/refund-frame.lua (refunds
record ids) and lib/decide.lua (a spend to be settled is registered as it is made).

Members, each scored by the spend's instant: "<id>" refunded; "<id>=<cost>" adjusted to that cost;
"+<id>" a spend registered as it was made (begin()/attempt(): it will be settled), not settled yet;
"+<id>=<cost>" such a spend adjusted (still owed its refund). Plus the markers `reset`, `floor`
and `life`. A registration leaves when its spend is refunded (or adjusted to 0), when it is older
than the ledger's lifetime, or with the ledger.

The cap counts every member but the markers. Over it, settled ids go first, oldest first, and the
floor rises to the latest of them; registrations go only when more of them than the cap are
unsettled on the key (oldest first). A registration never adjusted leaves without raising the
floor: its spend was neither refunded nor adjusted, so judged by the floor alone its refund can
be lost, never repeated nor mis-sized; an adjusted one raises it (its refund must give back the
new cost or nothing).
]]
-- With the three markers and the member added before trimming, at most 128 entries: Redis keeps
-- it a compact listpack (a zset never converts back once it has held more).
local LEDGER_CAP = 124

local MARKERS = { reset = true, floor = true, life = true }

-- Whether a member is a registered spend ("+<id>" or "+<id>=<cost>"): trimmed last.
local function registered(member)
  return string.byte(member, 1) == 43 -- '+'
end

-- Positions (in `list`, a ZRANGE WITHSCORES reply) of its settled ids and of its registrations.
local function sortMembers(list)
  local ids, registrations = {}, {}
  for i = 1, #list, 2 do
    local m = list[i]
    if not MARKERS[m] then
      if registered(m) then
        registrations[#registrations + 1] = i
      else
        ids[#ids + 1] = i
      end
    end
  end
  return ids, registrations
end

-- Takes `extra` members off a ledger over its cap (see above for which, and the floor).
local function trimOldest(ledger, extra)
  -- The markers sit among the oldest (`life` below every id): extra + 3 entries hold enough
  -- settled ids unless registrations are there too; then the whole ledger is read (it never holds
  -- more than the cap and the markers).
  local span = extra + 3
  local oldest = rcall('ZRANGE', ledger, 0, span - 1, 'WITHSCORES')
  local ids, registrations = sortMembers(oldest)
  if #ids < extra and #oldest == 2 * span then
    oldest = rcall('ZRANGE', ledger, 0, -1, 'WITHSCORES')
    ids, registrations = sortMembers(oldest)
  end
  local doomed, floor = {}, nil
  for _, i in ipairs(ids) do
    if #doomed == extra then break end
    doomed[#doomed + 1], floor = oldest[i], tonumber(oldest[i + 1])
  end
  for _, i in ipairs(registrations) do
    if #doomed == extra then break end
    doomed[#doomed + 1] = oldest[i]
    local score = tonumber(oldest[i + 1])
    if string.find(oldest[i], '=', 1, true) and (not floor or score > floor) then floor = score end
  end
  if #doomed > 0 then rcall('ZREM', ledger, unpack(doomed)) end
  if floor then rcall('ZADD', ledger, 'GT', string.format('%d', floor), 'floor') end
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
