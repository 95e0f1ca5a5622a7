--[[
lib/decide.lua: one policy's decision on its keys, in two steps shared by every consume script
(lib/consume-frame.lua, lib/stack-frame.lua, batch/consume.lua). Reads the prelude's `now` and
`cost` (a frame deciding several policies sets `cost` to each one's own first).

judge(evaluate, base, keyCount, limitCount, rules) evaluates every limit on every key against the
  state before this call (KEYS[base + (k-1)*limitCount + l] is key k under limit l, rules[l] is
  {limit, window, burst}) and returns evaluations, fits, remaining (room before this call),
  binding limit (the refusing one when it does not fit), wait, refusing key (0 when it fits) and
  seen: the latest instant a window's state proves the clock has reached (-1 if none is later than
  `now`). When seen > now, the clock stepped back since that state was written: the frame sets
  `now = seen` and judges again, so state from a newer window is never overwritten by an older
  reading (time is never earlier than the state has seen), and reports waits from the clock as it
  reads (see `behind`).
settle(commit, evaluations, base, keyCount, limitCount, rules, allowed, spend) commits a judged
  policy when `allowed` (the whole decision fitted) and `spend`; returns resetAfterMs and
  resetAfterMs had nothing been spent.
]]
local function judge(evaluate, base, keyCount, limitCount, rules)
  local evaluations = {}
  local fits, remaining, binding = true, math.huge, 1
  local wait, refusing, refusingLimit = 0, 0, 1
  local seen = -1
  for l = 1, limitCount do
    local rule = rules[l]
    for k = 1, keyCount do
      local i = (k - 1) * limitCount + l
      local ev = evaluate(KEYS[base + i], rule[1], rule[2], rule[3])
      evaluations[i] = ev
      if ev.seen and ev.seen > seen then seen = ev.seen end
      if not ev.fits then
        fits = false
        if refusing == 0 or ev.wait > wait or (ev.wait == wait and k < refusing) then
          wait, refusing, refusingLimit = ev.wait, k, l
        end
      end
      if ev.room < remaining then remaining, binding = ev.room, l end -- ties: the first limit
    end
  end
  if not fits then binding = refusingLimit end -- the refusing limit binds
  return evaluations, fits, remaining, binding, wait, refusing, seen
end

--[[ ms to add to a wait or reset judged at `now` to count it from the clock's reading `clockNow`. ]]
local function behind(ms, clockNow)
  if ms > 0 then return ms + now - clockNow end
  return 0
end

local function settle(commit, evaluations, base, keyCount, limitCount, rules, allowed, spend)
  local resetAfter, resetUnspent = 0, 0
  for l = 1, limitCount do
    local rule = rules[l]
    for k = 1, keyCount do
      local i = (k - 1) * limitCount + l
      local ev = evaluations[i]
      local reset, unspent = ev.reset(allowed), ev.reset(false)
      if reset > resetAfter then resetAfter = reset end
      if unspent > resetUnspent then resetUnspent = unspent end
      if allowed and spend then commit(KEYS[base + i], ev, rule[1], rule[2], rule[3]) end
    end
  end
  return resetAfter, resetUnspent
end

--[[
The mark of each caller key's last reset (0: none), from its ledger KEYS[ledgerBase + k] (see
lib/refund-frame.lua), appended to `reply` (written from reply[n + 1] on, with appendResetMarksAt): a spend's receipt keeps them, and a refund gives nothing
back on a key whose mark has moved since (it was reset after the spend). A peek appends zeros.
]]
local function appendResetMarksAt(reply, n, ledgerBase, keyCount, spend)
  for k = 1, keyCount do
    reply[n + k] = spend and tonumber(rcall('ZSCORE', KEYS[ledgerBase + k], 'reset')) or 0
  end
end

local function appendResetMarks(reply, ledgerBase, keyCount, spend)
  appendResetMarksAt(reply, #reply, ledgerBase, keyCount, spend)
end

--[[ Reads a decision's limits from ARGV, L at `at`, then {limit, window, burst} triples after it. ]]
local function readRules(at)
  local limitCount = tonumber(ARGV[at])
  local rules = {}
  for l = 1, limitCount do
    rules[l] = { tonumber(ARGV[at - 2 + 3 * l]), tonumber(ARGV[at - 1 + 3 * l]), tonumber(ARGV[at + 3 * l]) }
  end
  return limitCount, rules
end
