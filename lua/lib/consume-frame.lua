--[[
lib/consume-frame.lua: the part of every consume script that is the same for all algorithms.
Included (by the script loader) at the end of lua/<algorithm>/consume.lua, which defines:

  evaluate(key, limit, window, burst, ev) -> ev, filled with { fits, room, wait, seen, ... }
      fits   whether `cost` fits under this limit on this key now
      room   whole units left before this call
      wait   when it does not fit: ms until it does, if nobody else spends
  resetIn(ev, spent, key, limit, window)   ms until the key holds nothing under this limit
  commit(key, ev, limit, window, burst)   writes the spend evaluated as `ev`

KEYS   one per (caller key, limit), key-major: KEYS[(k-1)*L + l] is caller key k under limit l;
       then one refund ledger per caller key: KEYS[K*L + k] (its reset mark is read; a spend that
       will be settled is registered there); then,
       for a policy with a lockout, one lockout state per caller key: KEYS[K*(L+1) + k]; then,
       for a spend with a spend id, the process's outcome hash for this slot (lib/outcome.lua), last
ARGV   [1] now: ms on the limiter's clock, or '' to read Redis TIME
       [2] expiry offset: ms added to absolute expiries (0 on the Redis clock)
       [3] cost: whole units to charge on every key; 'cost:lifetime' for a spend that will be
           settled by its receipt (registered in the ledgers when allowed, see readCost in
           lib/decide.lua)
       [4] mode: '1' spend, '0' peek (write nothing)
       [5] spend id: unique per spend (members of a sliding log; an allowed spend's entry in the
           outcome hash is a field named after it, and a spend that finds it is a copy of one
           already made: see lib/outcome.lua), or '' (a peek)
       [6] deadline: ms on the same clock as now, or '' for none. A script that runs after it (the
           caller already gave up: a delayed, queued or replayed command) writes nothing
       [7] the limits: 'L;limit,window,burst;…', a triple per limit (window in ms; L is
           'L:duration:factor:max:forgetAfter' for a policy with a lockout, see readRules in
           lib/decide.lua)
       [8] present with the outcome hash (a spend with markers on): what pruneRuns in
           lib/outcome.lua reads ('+' to keep the hash longer, then the fields of earlier runs to
           delete from it, comma-separated), or ''
Return {the clock's reading, then the decision as writeDecision in lib/decide.lua writes it
        (status, remaining, retryAfterMs when refused, resetAfterMs, the instant decided at when
        it is not the clock's reading, the caller keys' reset marks when any is set, the end of
        the latest lockout holding the call back for a policy with a lockout)}
       or {now, -1} when the deadline had passed (and, for a spend, no copy of it had run)
]]
--#include lib/decide.lua

local model = { evaluate = evaluate, commit = commit, reset = resetIn }

local function main()
  local late = ARGV[6] ~= '' and now > ARGV[6] + 0
  local spend = ARGV[4] == '1'
  -- Every spend with an id is a run of one with an outcome hash (the last key): an allowed one
  -- leaves its field there; one that finds its field is a copy of a spend already made
  -- (lib/outcome.lua), answered as such even past the deadline (it writes nothing; the spend it
  -- answers was made in time, and its reply may be the only one to come).
  local marker = spend and ARGV[8] ~= nil and KEYS[#KEYS]
  if late and not marker then return { now, -1 } end

  local clockNow = now
  local settleLife
  cost, settleLife = readCost(ARGV[3])
  local limitCount, rules = readRules(7)
  local keyCount = (#KEYS - (marker and 1 or 0)) / (limitCount + (rules.block and 2 or 1))
  if keyCount % 1 ~= 0 then return redis.error_reply('redlimit: ' .. #KEYS .. ' keys for ' .. ARGV[7]) end
  if marker then
    pruneRuns(marker, ARGV[8])
    local copy = { clockNow }
    if answerCopy(copy, 1, clockNow, clockNow, rcall('HGET', marker, spendId), 1, limitCount, keyCount, rules.block)
    then
      return copy
    end
    if late then return { clockNow, -1 } end
    beginRun(clockNow, nil)
  end
  local allowed, remaining, binding, wait, refusing, seen, blockedUntil = judge(model, 0, keyCount, limitCount, rules)
  if seen > now then
    now = seen
    allowed, remaining, binding, wait, refusing, seen, blockedUntil = judge(model, 0, keyCount, limitCount, rules)
  end
  local marked = allowed and spend and readMarks(keyCount * limitCount, keyCount)
  local resetAfter = settle(model, 0, keyCount, limitCount, rules, allowed, spend, false)
  if allowed and spend and settleLife then register(keyCount * limitCount, keyCount, settleLife) end
  if marker then
    if allowed then noteOutcome(1, marked, keyCount, markValues) end
    writeRun(marker, spendId, nil)
  end
  if allowed then remaining = remaining - cost end -- a refusal spends nothing
  local reply = { clockNow }
  writeDecision(reply, 1, clockNow, clockNow, allowed, remaining, binding, wait, refusing, resetAfter, limitCount,
    keyCount, marked, rules.block, blockedUntil)
  return reply
end
