--[[
lib/decide.lua: one policy's decision on its keys, in two steps shared by every consume script
(lib/consume-frame.lua, lib/stack-frame.lua, batch/consume.lua). Reads the prelude's `now` and
`cost` (a frame deciding several policies sets `cost` to each one's own first).

A model is {evaluate, commit, reset} (see lib/models.lua):
  evaluate(key, limit, window, burst, ev) fills `ev` (a table reused from call to call: every
      field the model reads later is set) with fits, room, wait and seen (nil, or the instant
      the state proves the clock has reached) and returns it
  reset(ev, spent, key, limit, window) ms until the key holds nothing under that limit
  commit(key, ev, limit, window, burst) writes the spend evaluated as `ev`

judge(model, base, keyCount, limitCount, rules) evaluates every limit on every key against the
  state before this call (KEYS[base + (k-1)*limitCount + l] is key k under limit l, rules[l] is
  {limit, window, burst}; the evaluation is kept as evaluation(base + that index)) and returns
  fits, remaining (room before this call), binding limit (the refusing one when it does not fit),
  wait, refusing key (0 when it fits) and seen: the latest instant a window's state proves the
  clock has reached (-1 if none is later than `now`). When seen > now, the clock stepped back
  since that state was written: the frame sets `now = seen` and judges again, so state from a
  newer window is never overwritten by an older reading (time is never earlier than the state has
  seen), and reports waits from the clock as it reads (see `behind`).
settle(model, base, keyCount, limitCount, rules, allowed, spend, unspent) commits a judged
  policy when `allowed` (the whole decision fitted) and `spend`; returns resetAfterMs and, when
  `unspent` is asked for, resetAfterMs had nothing been spent (else 0).
]]
local evaluations = {}

local function evaluation(i)
  local ev = evaluations[i]
  if not ev then
    ev = {}
    evaluations[i] = ev
  end
  return ev
end

local function judge(model, base, keyCount, limitCount, rules)
  local evaluate = model.evaluate
  local fits, remaining, binding = true, math.huge, 1
  local wait, refusing, refusingLimit = 0, 0, 1
  local seen = -1
  for l = 1, limitCount do
    local rule = rules[l]
    for k = 1, keyCount do
      local i = base + (k - 1) * limitCount + l
      local ev = evaluate(KEYS[i], rule[1], rule[2], rule[3], evaluation(i))
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
  return fits, remaining, binding, wait, refusing, seen
end

--[[ ms to add to a wait or reset judged at `now` to count it from the clock's reading `clockNow`. ]]
local function behind(ms, clockNow)
  if ms > 0 then return ms + now - clockNow end
  return 0
end

local function settle(model, base, keyCount, limitCount, rules, allowed, spend, unspent)
  local reset, commit = model.reset, model.commit
  local resetAfter, resetUnspent = 0, 0
  for l = 1, limitCount do
    local rule = rules[l]
    for k = 1, keyCount do
      local i = base + (k - 1) * limitCount + l
      local ev = evaluations[i]
      local ms = reset(ev, allowed, KEYS[i], rule[1], rule[2])
      if ms > resetAfter then resetAfter = ms end
      if unspent then
        ms = allowed and reset(ev, false, KEYS[i], rule[1], rule[2]) or ms
        if ms > resetUnspent then resetUnspent = ms end
      end
      if allowed and spend then commit(KEYS[i], ev, rule[1], rule[2], rule[3]) end
    end
  end
  return resetAfter, resetUnspent
end

--[[
The mark of each caller key's last reset (0: none), from its ledger KEYS[ledgerBase + k] (see
lib/refund-frame.lua), written to reply[n + 1] on (appendResetMarks: after the last value): a
spend's receipt keeps them, and a refund gives nothing back on a key whose mark has moved since
(it was reset after the spend). A peek or a refusal gets zeros.
]]
local function appendResetMarksAt(reply, n, ledgerBase, keyCount, spend)
  for k = 1, keyCount do
    local mark = spend and rcall('ZSCORE', KEYS[ledgerBase + k], 'reset')
    reply[n + k] = mark and tonumber(mark) or 0
  end
end

local function appendResetMarks(reply, ledgerBase, keyCount, spend)
  appendResetMarksAt(reply, #reply, ledgerBase, keyCount, spend)
end

-- Small whole numbers as ARGV strings, read without tonumber (which costs a strtod).
local SMALL = {}
for v = 0, 256 do SMALL[v .. ''] = v end -- (no tostring while the library loads)

local function number(text)
  return SMALL[text] or tonumber(text)
end

--[[ Reads a decision's limits from ARGV, L at `at`, then {limit, window, burst} triples after it. ]]
local function readRules(at)
  local limitCount = number(ARGV[at])
  local rules = {}
  for l = 1, limitCount do
    rules[l] = { number(ARGV[at - 2 + 3 * l]), number(ARGV[at - 1 + 3 * l]), number(ARGV[at + 3 * l]) }
  end
  return limitCount, rules
end

--[[
A decision's answer packed in one number: allowed (0 or 1) + 2 × (binding limit + (L + 1) ×
refusing key), both 1-based (the key 0 when allowed), L the decision's number of limits. Redis
converts every reply value, so fewer is faster.
]]
local function status(allowed, binding, refusing, limitCount)
  return (allowed and 1 or 0) + 2 * (binding + (limitCount + 1) * refusing)
end
