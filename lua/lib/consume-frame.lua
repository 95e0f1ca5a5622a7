--[[
lib/consume-frame.lua: the part of every consume script that is the same for all algorithms.
Included (by the script loader) at the end of lua/<algorithm>/consume.lua, which defines:

  evaluate(key, limit, window, burst) -> { fits, room, wait, reset(spent), ... }
      fits   whether `cost` fits under this limit on this key now
      room   whole units left before this call
      wait   when it does not fit: ms until it does, if nobody else spends
      reset  function(spent): ms until the key holds nothing under this limit
  commit(key, ev, limit, window, burst)   writes the spend evaluated as `ev`

KEYS   one per (caller key, limit), key-major: KEYS[(k-1)*L + l] is caller key k under limit l;
       then one refund ledger per caller key: KEYS[K*L + k] (only its reset mark is read)
ARGV   [1] now: ms on the limiter's clock, or '' to read Redis TIME
       [2] expiry offset: ms added to absolute expiries (0 on the Redis clock)
       [3] cost: whole units to charge on every key
       [4] mode: '1' spend, '0' peek (write nothing)
       [5] spend id: unique per spend (members of a sliding log), or ''
       [6] deadline: ms on the same clock as now, or '' for none. A script that runs after it (the
           caller already gave up: a delayed, queued or replayed command) writes nothing
       [7] L: number of limits, then for l = 1..L: [5 + 3l] limit, [6 + 3l] window ms, [7 + 3l] burst
Return {allowed 0|1, remaining, binding limit (1-based: the refusing one when refused),
        retryAfterMs, resetAfterMs, refusing key (1-based, 0 if allowed), the clock's reading,
        resetAfterMs had nothing been spent (to merge the answers of several Cluster slots),
        the instant decided at (the clock's reading, or later when state showed the clock had
        stepped back: see lib/decide.lua), then per caller key the mark of its last reset}
       or {-1, now} when the deadline had passed
]]
--#include lib/decide.lua

local function main()
  if ARGV[6] ~= '' and now > tonumber(ARGV[6]) then return { -1, now } end

  local clockNow = now
  local limitCount, rules = readRules(7)
  local keyCount = #KEYS / (limitCount + 1)
  local evaluations, allowed, remaining, binding, wait, refusing, seen =
    judge(evaluate, 0, keyCount, limitCount, rules)
  if seen > now then
    now = seen
    evaluations, allowed, remaining, binding, wait, refusing =
      judge(evaluate, 0, keyCount, limitCount, rules)
  end
  local spend = ARGV[4] == '1'
  local resetAfter, resetUnspent =
    settle(commit, evaluations, 0, keyCount, limitCount, rules, allowed, spend)
  if allowed then remaining = remaining - cost end -- a refusal spends nothing
  local reply = { allowed and 1 or 0, remaining, binding, behind(wait, clockNow),
    behind(resetAfter, clockNow), refusing, clockNow, behind(resetUnspent, clockNow), now }
  appendResetMarks(reply, keyCount * limitCount, keyCount, spend and allowed)
  return reply
end
