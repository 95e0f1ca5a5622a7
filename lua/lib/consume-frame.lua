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
       for a policy with a lockout, one lockout state per caller key: KEYS[K*(L+1) + k]
ARGV   [1] now: ms on the limiter's clock, or '' to read Redis TIME
       [2] expiry offset: ms added to absolute expiries (0 on the Redis clock)
       [3] cost: whole units to charge on every key; 'cost:lifetime' for a spend that will be
           settled by its receipt (registered in the ledgers when allowed, see readCost in
           lib/decide.lua)
       [4] mode: '1' spend, '0' peek (write nothing)
       [5] spend id: unique per spend (members of a sliding log), or ''
       [6] deadline: ms on the same clock as now, or '' for none. A script that runs after it (the
           caller already gave up: a delayed, queued or replayed command) writes nothing
       [7] L: number of limits ('L:duration:factor:max:forgetAfter' for a policy with a lockout,
           see readRules in lib/decide.lua), then for l = 1..L: [5 + 3l] limit, [6 + 3l] window
           ms, [7 + 3l] burst
Return {the clock's reading, status (allowed, binding limit and refusing key packed: see `status`
        in lib/decide.lua), remaining, retryAfterMs, resetAfterMs, the instant decided at (the
        clock's reading, or later when state showed the clock had stepped back: see
        lib/decide.lua), then per caller key the mark of its last reset, then for a policy with a
        lockout the end of the latest lockout holding the call back (0: none)}
       or {now, -1} when the deadline had passed
]]
--#include lib/decide.lua

local model = { evaluate = evaluate, commit = commit, reset = resetIn }

local function main()
  if ARGV[6] ~= '' and now > tonumber(ARGV[6]) then return { now, -1 } end

  local clockNow = now
  local settleLife
  cost, settleLife = readCost(ARGV[3])
  local limitCount, rules = readRules(7)
  local keyCount = #KEYS / (limitCount + (rules.block and 2 or 1))
  local allowed, remaining, binding, wait, refusing, seen, blockedUntil = judge(model, 0, keyCount, limitCount, rules)
  if seen > now then
    now = seen
    allowed, remaining, binding, wait, refusing, seen, blockedUntil = judge(model, 0, keyCount, limitCount, rules)
  end
  local spend = ARGV[4] == '1'
  local resetAfter = settle(model, 0, keyCount, limitCount, rules, allowed, spend, false)
  if allowed and spend and settleLife then register(keyCount * limitCount, keyCount, settleLife) end
  if allowed then remaining = remaining - cost end -- a refusal spends nothing
  local reply = { clockNow, status(allowed, binding, refusing, limitCount), remaining, behind(wait, clockNow),
    behind(resetAfter, clockNow), now }
  appendResetMarksAt(reply, 6, keyCount * limitCount, keyCount, spend and allowed)
  if rules.block then reply[7 + keyCount] = blockedUntil end
  return reply
end
