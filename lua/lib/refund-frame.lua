--[[
lib/refund-frame.lua: the part of every refund script that is the same for all algorithms. It also
adjusts a spend to another cost (`Limiter.adjust`): less gives the difference back as a refund
would, more charges the extra where the spend was charged, without a limit check.
Included at the end of lua/<algorithm>/refund.lua, which defines:

  refund(key, limit, window, burst, at) -> 1 if it gave anything back, else 0
      gives back `cost` units charged at instant `at` (ARGV[4]) by spend `spendId` (ARGV[5]),
      to the window/bucket they were taken from; never below zero, never creating a key. `keep`
      units of the spend stay (a partial refund: an adjustment down); `reserved` is what the spend
      was charged when it was made (sliding-log names its members after it)
  charge(key, limit, window, burst, at) -> 1 if it charged anything, else 0
      adds `cost` units to the spend at `at` (above its `keep` units) where they would have been
      charged with it; nothing where the spend no longer weighs (its window is over)
  grant(key, limit, window, burst) -> 1 if it gave anything, else 0
      gives `cost` units of room now (`Limiter.grant`, a one-off allowance), never beyond an
      empty state. A caller key given anything has its reset mark moved as a reset moves it
      (reset/reset.lua): the grant settles every spend made before it, whose receipts then give
      back nothing. Counts do not say which spends a grant gave back, so else a spend's units
      could come back twice (from the grant, then its receipt, landing on a count emptied and
      written again since); and MemoryStore, which tells a state written again from the one a
      spend charged, would disagree with Redis

Each caller key also has a ledger (a sorted set, same hash tag; its members and how it is trimmed:
lib/ledger.lua): the ids of spends already refunded, scored by the spend's instant; the spends of
begin()/attempt() not settled yet, registered when they were made ("+<id>"); and three markers:
`reset` (scored by the last reset's mark, see reset/reset.lua), `floor` (the latest instant of ids
trimmed from a full ledger) and `life` (scored by the longest policy lifetime it was written with:
ids are pruned by it, never by the limits a receipt names). A spend gives nothing back when it is
older than the policy's lifetime, not on a key reset since (its receipt keeps the key's mark when
it was charged: a reset since moved it; no clock is compared, so a reset in the same millisecond
as the spend, before or after it, is told apart), not at or below the floor unless the ledger
holds it as registered, and not twice (however many copies of its receipt come back). An adjusted
spend is recorded as "<id>=<new cost>" ("+<id>=<new cost>" while registered and owed a refund):
it is adjusted at most once, and a refund after it gives back the new cost (then the member
becomes "<id>"). The ledger keeps only members within the lifetime, at most 124 of them (a compact
listpack of at most 128 entries, ~3 KB), and expires with its newest entry: memory per caller key
stays bounded whatever the traffic. A compensation (Cluster) refunds a spend no receipt was issued
for: it is not recorded, and its registration goes. A refund writes nothing when it gives nothing
back; an adjustment is always recorded (so a copy of its receipt, or a later refund, knows it).

KEYS   the state keys as in consume-frame.lua (K caller keys × L limits), then one ledger per
       caller key: KEYS[K*L + k]
ARGV   [1] now ('' for Redis TIME)  [2] expiry offset  [3] cost that was charged
       [4] at: the spend's `now`; or 'grant' for a grant ([3] the units, [5] the
           caller's deadline on the script's clock or '' for none: run after it, the grant writes
           nothing and answers -1; the marks unused); or 'outcome:<deadline>/<place>/<field>' (no deadline digits for
           none) to settle a spend whose reply was lost: the spend's instant and marks are read
           from its entry (its place in its run) in its run's field of the outcome hash, one more
           key after the ledgers (see lib/outcome.lua), and no marks follow the limits. Before the
           spend's deadline has passed on the script's clock it answers -1 (the spend may still
           run) and changes nothing
       [5] spend id
       [6] the policy's lifetime ms (its longest state); negative for a compensation (not recorded)
       [7] L, then for l = 1..L: [5 + 3l] limit, [6 + 3l] window ms, [7 + 3l] burst
       then per caller key k: [7 + 3L + k] the reset mark the spend's receipt kept ('' for 0)
       then, to adjust instead of refunding: [8 + 3L + K] the spend's new cost
       and, for a compensation that adjusts (a memory-fallback spend charged into the store, or
       its charge changed since), [9 + 3L + K] the spend's cost when it was made. Such a charge
       has [4] 'fallback:<at>' and one more key, last: its charge marker, holding what the spend
       weighs in the store (written after every change, kept for the policy's lifetime), which
       is read in place of [3] when it is there, so the same charge sent again changes nothing
Return number of (key, limit) states that gave something back (or were charged); in outcome
       mode -1 before the deadline, -2 when there is no marker
]]
--#include lib/ledger.lua
--#include lib/outcome.lua

-- What the ledger holds of spend `spendId` at `at`, from one read of the members scored by that
-- instant: whether it was refunded ("<id>"), if it was adjusted its new cost and member, and
-- whether it was registered when it was made and is not settled yet ("+<id>", "+<id>=<cost>").
local function ledgerEntry(ledger, at)
  local plain, mark = spendId .. '=', '+' .. spendId
  local pendingPrefix = mark .. '='
  local instant = string.format('%d', at)
  local refunded, adjustedTo, member, pending = false, nil, nil, false
  for _, m in ipairs(rcall('ZRANGE', ledger, instant, instant, 'BYSCORE')) do
    if m == spendId then
      refunded = true
    elseif string.sub(m, 1, #plain) == plain then
      adjustedTo, member = tonumber(string.sub(m, #plain + 1)), m
    end
  end
  -- Registrations are scored apart (see lib/ledger.lua).
  local registeredAt = string.format('%d', -(at + 1))
  for _, m in ipairs(rcall('ZRANGE', ledger, registeredAt, registeredAt, 'BYSCORE')) do
    if m == mark then
      pending = true
    elseif string.sub(m, 1, #pendingPrefix) == pendingPrefix then
      adjustedTo, member, pending = tonumber(string.sub(m, #pendingPrefix + 1)), m, true
    end
  end
  return refunded, adjustedTo, member, pending
end

-- The reset mark each caller key had when the spend was made (from its receipt, or its marker).
local receiptMarks = {}
-- Set for a compensation: a spend no receipt was issued for (ARGV[6] < 0), which the ledger never
-- held: a cross-slot spend's slot group undone (Cluster), or a spend the memory fallback allowed,
-- charged into the store when it is back (lib/stores/redis-fleet.ts).
local compensation

-- Whether spend `spendId` charged at `at` already weighs on nothing for caller key k.
local function settled(ledger, k, at, lifetime, limitCount, refunded, pending)
  if refunded or now - at > lifetime then return true end -- refunded already, or weighs on nothing
  local marks = rcall('ZMSCORE', ledger, 'reset', 'floor')
  local mark, floor = tonumber(marks[1]), tonumber(marks[2])
  if mark and mark > receiptMarks[k] then return true end -- reset since
  -- Older than what the ledger still remembers, unless the ledger holds it as registered and
  -- unsettled (trimming never takes those), or it is a compensation (the ledger never held it).
  return not pending and not compensation and floor ~= nil and at <= floor
end

-- Gives back (or, with a new cost, adjusts) the spend at `at` on every caller key and limit; with
-- `chargeMarker`, what the spend weighs is read from it and written to it after.
local function settleSpend(at, keyCount, limitCount, chargeMarker)
  local lifetime = tonumber(ARGV[6])
  local record = lifetime >= 0 and spendId ~= ''
  compensation = lifetime < 0
  if compensation then lifetime = -lifetime end
  local target = tonumber(ARGV[8 + 3 * limitCount + keyCount]) -- nil: a refund
  local charged = cost
  if chargeMarker then charged = tonumber(rcall('GET', chargeMarker)) or cost end
  -- A fallback spend's units as it was made (it names sliding-log members), when it now weighs
  -- something else; else what it was charged.
  reserved = tonumber(ARGV[9 + 3 * limitCount + keyCount]) or cost
  local reduced = 0
  for k = 1, keyCount do
    local first = (k - 1) * limitCount
    local ledger = KEYS[keyCount * limitCount + k]
    local refunded, current, adjusted, pending = false, nil, nil, false
    if record and now - at <= lifetime then refunded, current, adjusted, pending = ledgerEntry(ledger, at) end
    current = current or charged
    -- (an adjusted spend is not adjusted again)
    if not (target and adjusted) and not settled(ledger, k, at, lifetime, limitCount, refunded, pending) then
      local given, apply = 0, refund
      keep, cost = 0, current
      if target then
        keep, cost = math.min(current, target), math.abs(target - current)
        if target > current then apply = charge end
      end
      if cost > 0 then
        for l = 1, limitCount do
          local limit, window, burst = tonumber(ARGV[5 + 3 * l]), tonumber(ARGV[6 + 3 * l]), tonumber(ARGV[7 + 3 * l])
          given = given + apply(KEYS[first + l], limit, window, burst, at)
        end
      end
      -- A registered spend stays registered while it still holds something to give back (an
      -- adjustment to more than 0); its refund, or an adjustment to 0, settles it.
      if record and target then
        if pending then rcall('ZREM', ledger, '+' .. spendId) end
        local member = spendId .. '=' .. string.format('%d', target)
        remember(ledger, at, lifetime, (pending and target > 0) and '+' .. member or member)
      elseif record and given > 0 then
        if adjusted then
          rcall('ZREM', ledger, adjusted)
        elseif pending then
          rcall('ZREM', ledger, '+' .. spendId)
        end
        remember(ledger, at, lifetime, spendId)
      end
      reduced = reduced + given
    end
    -- A compensation (Cluster) undoes a spend whose receipt was never issued: its registration goes.
    if compensation and spendId ~= '' then rcall('ZREM', ledger, '+' .. spendId) end
  end
  if chargeMarker then
    rcall('SET', chargeMarker, string.format('%d', target), 'PX', math.max(1, lifetime))
  end
  return reduced
end

-- A grant: `cost` units of room on every caller key and limit; the reset mark of each caller key
-- given anything moves on (as in reset/reset.lua), so receipts of earlier spends give nothing back.
local function grantAll(limitCount)
  if ARGV[5] ~= '' and now > tonumber(ARGV[5]) then return -1 end -- the caller gave up: nothing
  local keyCount = #KEYS / (limitCount + 1)
  local lifetime = tonumber(ARGV[6])
  local given = 0
  for k = 1, keyCount do
    local ledger = KEYS[keyCount * limitCount + k]
    local expireAt, before = math.max(now + lifetime + offset, rcall('PEXPIRETIME', ledger)), given
    for l = 1, limitCount do
      local key = KEYS[(k - 1) * limitCount + l]
      local limit, window, burst = tonumber(ARGV[5 + 3 * l]), tonumber(ARGV[6 + 3 * l]), tonumber(ARGV[7 + 3 * l])
      expireAt = math.max(expireAt, rcall('PEXPIRETIME', key))
      given = given + grant(key, limit, window, burst)
    end
    if given > before then
      local mark = math.max((tonumber(rcall('ZSCORE', ledger, 'reset')) or 0) + 1, now)
      rcall('ZADD', ledger, mark, 'reset')
      rcall('PEXPIREAT', ledger, expireAt)
    end
  end
  return given
end

local function main()
  local limitCount = tonumber(ARGV[7])
  if ARGV[4] == 'grant' then return grantAll(limitCount) end
  local at, keyCount
  local mode = string.sub(ARGV[4], 1, 8)
  if mode == 'outcome:' then
    -- Outcome mode: the spend's reply never reached its caller. Its entry in its run's field of
    -- the outcome hash (the last key) says whether it ran allowed, and at which instant with which
    -- marks (see lib/outcome.lua).
    local deadline, place, field = string.match(ARGV[4], '^outcome:([^/]*)/(%d+)/(.+)$')
    if not field then return redis.error_reply('redlimit: not an outcome settlement: ' .. ARGV[4]) end
    if deadline ~= '' and now <= deadline + 0 then return -1 end -- it may still run: not yet
    local hash = KEYS[#KEYS]
    place = tonumber(place)
    local value = rcall('HGET', hash, field)
    keyCount = (#KEYS - 1) / (limitCount + 1)
    at = value and readOutcome(value, place, keyCount, receiptMarks)
    -- It never ran allowed (or is settled, or forgotten): nothing to give back.
    if not at then return -2 end
    local rest = withoutOutcome(value, place)
    if rest then rcall('HSET', hash, field, rest) else rcall('HDEL', hash, field) end
  else
    local chargeMarker
    if string.sub(ARGV[4], 1, 9) == 'fallback:' then
      -- A memory-fallback spend charged into the store: what it weighs here is kept in its charge
      -- marker (the last key), so a charge sent again (its reply lost) changes nothing more.
      at, chargeMarker = tonumber(string.sub(ARGV[4], 10)), KEYS[#KEYS]
      keyCount = (#KEYS - 1) / (limitCount + 1)
    else
      at = tonumber(ARGV[4])
      keyCount = #KEYS / (limitCount + 1)
    end
    for k = 1, keyCount do receiptMarks[k] = tonumber(ARGV[7 + 3 * limitCount + k]) or 0 end
    return settleSpend(at, keyCount, limitCount, chargeMarker)
  end
  return settleSpend(at, keyCount, limitCount, nil)
end
