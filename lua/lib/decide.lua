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
  {limit, window, burst}; the evaluation is kept as evaluation(base + that index)), and for a
  policy with a lockout every key's lockout (see judgeBlocks), and returns fits, remaining (room
  before this call), binding limit (the refusing one when it does not fit), wait, refusing key
  (0 when it fits), seen and blockedUntil (see judgeBlocks). seen: the latest instant a window's
  state proves the clock has reached (-1 if none is later than `now`). When seen > now, the clock
  stepped back since that state was written: the frame sets `now = seen` and judges again, so
  state from a newer window is never overwritten by an older reading (time is never earlier than
  the state has seen), and reports waits from the clock as it reads (see `behind`).
settle(model, base, keyCount, limitCount, rules, allowed, spend, unspent) commits a judged
  policy when `allowed` (the whole decision fitted) and `spend`; returns resetAfterMs and, when
  `unspent` is asked for, resetAfterMs had nothing been spent (else 0); a policy with a lockout
  counts lockout ends in both and, for a refused spend, writes the lockouts it starts.
]]
--#include lib/ledger.lua
--#include lib/outcome.lua

local evaluations = {}

local function evaluation(i)
  local ev = evaluations[i]
  if not ev then
    ev = {}
    evaluations[i] = ev
  end
  return ev
end

--[[
Lockouts (policy option `block`, rules.block = {duration, factor, max, forgetAfter} in ms). Each
caller key k has a lockout state KEYS[base + K*(L+1) + k]: 'until:duration:forgetAt', the current
(or last) lockout's end and length, and the instant the next one stops escalating (state written
at or after forgetAt is forgotten; the key expires then too). A key locked out at `now` refuses
(wait: the lockout's end; remaining 0). A key out of budget while not locked out refuses and, if
the decision refuses and spends, is locked out by settle(): for `duration`, or, while the last
lockout is remembered, for that one's length × factor, within [duration, max]. A peek reports the
lockout a consume would start. The refusing key is the one with the longest wait (ties: the
first key), and the binding limit is that key's own (its longest budget wait, else its least
room; ties: the first limit), as when keys are judged apart (Cluster slot groups); blockedUntil is
the latest lockout end among the keys (0: none).
]]
local blockEnds, blockNew = {}, {}

local function judgeBlocks(block, base, keyCount, limitCount, fits, remaining, binding, wait, refusing)
  local duration, factor, maxMs = block[1], block[2], block[3]
  local blockBase = base + keyCount * (limitCount + 1)
  local held, longest, refusingKey, refusingLimit, blockedUntil = false, 0, 0, 1, 0
  for k = 1, keyCount do
    -- The key's own binding limit: its longest budget wait, else its least room (ties: first).
    local budgetFits, budgetWait, waitLimit, room, roomLimit = true, 0, 0, math.huge, 1
    for l = 1, limitCount do
      local ev = evaluations[base + (k - 1) * limitCount + l]
      if not ev.fits then
        if budgetFits or ev.wait > budgetWait then budgetWait, waitLimit = ev.wait, l end
        budgetFits = false
      end
      if ev.room < room then room, roomLimit = ev.room, l end
    end
    local untilAt, last = 0, 0
    local raw = rcall('GET', KEYS[blockBase + k])
    if raw then
      local u, d, f = string.match(raw, '^(%d+):(%d+):(%d+)$')
      if f and tonumber(f) > now then untilAt, last = tonumber(u), tonumber(d) end
    end
    local keyWait, ends, new = -1, 0, 0
    if untilAt > now then
      held, ends, keyWait = true, untilAt, untilAt - now
      if not budgetFits and budgetWait > keyWait then keyWait = budgetWait end
    elseif not budgetFits and duration == 0 then
      keyWait = budgetWait -- a policy that starts no lockout (it honours those of its name)
    elseif not budgetFits then
      new = duration
      if last > 0 then new = math.max(duration, math.min(math.floor(last * factor), maxMs)) end
      -- (`restart`: the lockout forgets the key's count, so only the lockout is waited out)
      ends, keyWait = now + new, block[5] and new or math.max(budgetWait, new)
    end
    blockEnds[blockBase + k], blockNew[blockBase + k] = ends, new
    if ends > blockedUntil then blockedUntil = ends end
    if keyWait >= 0 and (refusingKey == 0 or keyWait > longest) then
      longest, refusingKey = keyWait, k
      refusingLimit = budgetFits and roomLimit or waitLimit
    end
  end
  -- The refusing key binds with its own limit (as when each key is judged on its own, on Cluster).
  if refusingKey > 0 then fits, binding, wait, refusing = false, refusingLimit, longest, refusingKey end
  if held then remaining = 0 end
  return fits, remaining, binding, wait, refusing, blockedUntil
end

-- Whether a write called with redis.pcall was refused (out of memory: Redis answered an error).
local function refusedWrite(reply)
  return type(reply) == 'table' and reply.err ~= nil
end

--[[
`restart` (block[5]: the policy's lifetime ms): the lockout forgets caller key k's count, so the
caller starts over when it ends. Like a reset (see reset/reset.lua), it first moves the key's reset
mark, so receipts of spends made before it refund and adjust nothing; without the mark (out of
memory) the count stays.
]]
local function forgetCount(base, keyCount, limitCount, k, lifetime)
  local ledger = KEYS[base + keyCount * limitCount + k]
  -- The ledger outlives every state it wipes (a clock behind can have written later expiries).
  local expireAt = math.max(now + lifetime + offset, rcall('PEXPIRETIME', ledger))
  for l = 1, limitCount do expireAt = math.max(expireAt, rcall('PEXPIRETIME', KEYS[base + (k - 1) * limitCount + l])) end
  local mark = math.max((tonumber(rcall('ZSCORE', ledger, 'reset')) or 0) + 1, now)
  if refusedWrite(redis.pcall('ZADD', ledger, mark, 'reset')) then return end
  rcall('PEXPIREAT', ledger, expireAt)
  for l = 1, limitCount do rcall('DEL', KEYS[base + (k - 1) * limitCount + l]) end
end

-- After judgeBlocks: lockout ends count in resetAfter; a refused spend writes the new lockouts.
local function settleBlocks(block, base, keyCount, limitCount, allowed, spend, resetAfter, resetUnspent)
  local blockBase = base + keyCount * (limitCount + 1)
  for k = 1, keyCount do
    local ends, new = blockEnds[blockBase + k], blockNew[blockBase + k]
    if ends > now then
      if ends - now > resetAfter then resetAfter = ends - now end
      if ends - now > resetUnspent then resetUnspent = ends - now end
    end
    if new > 0 and spend and not allowed then
      -- Out of memory, Redis refuses the lockout (and the mark): the refusal stands all the same;
      -- what is lost is the lockout and its escalation, and a restart forgets nothing without them.
      local forgetAt = ends + block[4]
      local locked = redis.pcall('SET', KEYS[blockBase + k], string.format('%d:%d:%d', ends, new, forgetAt), 'PXAT',
        forgetAt + offset)
      if block[5] and not refusedWrite(locked) then forgetCount(base, keyCount, limitCount, k, block[5]) end
    end
  end
  return resetAfter, resetUnspent
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
      local ev = evaluate(KEYS[i], rule[1], rule[2], rule[3], evaluations[i] or evaluation(i))
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
  local blockedUntil = 0
  if rules.block then
    fits, remaining, binding, wait, refusing, blockedUntil = judgeBlocks(rules.block, base, keyCount, limitCount,
      fits, remaining, binding, wait, refusing)
  end
  return fits, remaining, binding, wait, refusing, seen, blockedUntil
end

--[[ ms to add to a wait or reset judged at `now` to count it from the clock's reading `clockNow`. ]]
local function behind(ms, clockNow)
  if ms > 0 then return ms + now - clockNow end
  return 0
end

local function settle(model, base, keyCount, limitCount, rules, allowed, spend, unspent)
  local reset, commit = model.reset, model.commit
  local resetAfter, resetUnspent = 0, 0
  -- A refusal that starts a `restart` lockout forgets that key's count: the key is back to a full
  -- budget when the lockout ends (settleBlocks counts it), whatever its count said.
  local restarting = rules.block and rules.block[5] and not allowed
  local blockBase = base + keyCount * (limitCount + 1)
  for l = 1, limitCount do
    local rule = rules[l]
    for k = 1, keyCount do
      local i = base + (k - 1) * limitCount + l
      local ev = evaluations[i]
      local ms = 0
      if not (restarting and blockNew[blockBase + k] > 0) then ms = reset(ev, allowed, KEYS[i], rule[1], rule[2]) end
      if ms > resetAfter then resetAfter = ms end
      if unspent then
        ms = allowed and reset(ev, false, KEYS[i], rule[1], rule[2]) or ms
        if ms > resetUnspent then resetUnspent = ms end
      end
      if allowed and spend then commit(KEYS[i], ev, rule[1], rule[2], rule[3]) end
    end
  end
  if rules.block then
    resetAfter, resetUnspent = settleBlocks(rules.block, base, keyCount, limitCount, allowed, spend, resetAfter,
      resetUnspent)
  end
  return resetAfter, resetUnspent
end

--[[
The mark of each caller key's last reset (0: none), from its ledger KEYS[ledgerBase + k] (see
lib/refund-frame.lua), appended to reply (lib/stack-frame.lua; the other frames answer through
writeDecision): a spend's receipt keeps them, and a refund gives nothing back on a key whose mark
has moved since (it was reset after the spend). A peek or a refusal gets zeros.
]]
local function appendResetMarks(reply, ledgerBase, keyCount, spend)
  local n = #reply
  for k = 1, keyCount do
    local mark = spend and rcall('ZSCORE', KEYS[ledgerBase + k], 'reset')
    reply[n + k] = mark and tonumber(mark) or 0
  end
end

--[[
A spend's cost argument: 'cost', or 'cost:lifetime' for a spend that will be settled by its
receipt (begin(), attempt()): returns the cost, and that lifetime (the policy's longest state, ms)
or nil. Such a spend, once allowed, is registered in its keys' ledgers (`register`, see
lib/ledger.lua), so that its first refund or adjustment is honoured whatever the ledger has
trimmed since; a plain consume writes no ledger.
]]
local function readCost(text)
  local small = SMALL[text]
  if small then return small, nil end -- the common case: a plain cost, no pattern matched
  local colon = string.find(text, ':', 1, true)
  if not colon then return tonumber(text), nil end
  return tonumber(string.sub(text, 1, colon - 1)), tonumber(string.sub(text, colon + 1))
end

--[[
Reads a decision's limits from ARGV[at], one argument: 'L;limit,window,burst;…' (a triple per
limit; L is 'L:duration:factor:max:forgetAfter' for a policy with a lockout, then ':lifetime', the
policy's longest state in ms, when a lockout restarts the count). Returns L and the rules:
{limit, window, burst} per limit and `block` ({duration, factor, max, forgetAfter, lifetime or
false}, or nil). A policy sends the same text on every call, so what it reads to is kept, by text,
for the library's life (up to RULES_KEPT texts, then they start over): the rules are shared and
never written to.
]]
local RULES_KEPT = 512
local rulesByText, rulesKept = {}, 0

local function parseRules(spec)
  local head, rest = string.match(spec, '^([^;]*)(.*)$')
  local limitCount = SMALL[head]
  local block
  if not limitCount then
    local l, d, f, m, g, r = string.match(head, '^(%d+):(%d+):([^:]+):(%d+):(%d+):?(%d*)$')
    if l then
      limitCount, block = tonumber(l), { tonumber(d), tonumber(f), tonumber(m), tonumber(g), tonumber(r) or false }
    else
      limitCount = tonumber(head)
    end
  end
  local rules = { block = block, count = limitCount }
  local l = 0
  for limit, window, burst in string.gmatch(rest, ';(%d+),(%d+),(%d+)') do
    l = l + 1
    rules[l] = { tonumber(limit), tonumber(window), tonumber(burst) }
  end
  if not limitCount or l ~= limitCount then
    error('redlimit: malformed limits argument ' .. spec)
  end
  return rules
end

local function readRules(at)
  local spec = ARGV[at]
  local rules = rulesByText[spec]
  if not rules then
    rules = parseRules(spec)
    if rulesKept >= RULES_KEPT then rulesByText, rulesKept = {}, 0 end
    rulesByText[spec], rulesKept = rules, rulesKept + 1
  end
  return rules.count, rules
end

local markValues = {}

--[[
Reads each caller key's reset mark (0: none) from its ledger KEYS[ledgerBase + k] into markValues
for writeDecision; returns whether any key has one. Called for an allowed spend before it is
written: a ledger of another type fails the call before anything is.
]]
local function readMarks(ledgerBase, keyCount)
  local any = false
  for k = 1, keyCount do
    local mark = rcall('ZSCORE', KEYS[ledgerBase + k], 'reset')
    if mark then
      markValues[k], any = tonumber(mark), true
    else
      markValues[k] = 0
    end
  end
  return any
end

--[[
One decision of lib/consume-frame.lua or batch/consume.lua, answered from reply[n + 1] on with only
what its caller reads (Redis converts every value a script returns, each costing about as much as
a short command's argument); returns the index of its last value:
  status     allowed (1) + 2 when reset marks follow + 4 when the instant decided at follows
             + 8 × (binding limit + (L + 1) × refusing key), both 1-based (the key 0 when
             allowed), L the number of limits
  remaining  whole units left after this call
  retryAfterMs   only when refused (it is 0 when allowed)
  resetAfterMs
  the instant decided at, only when it is not `ref` (the reply's clock reading): later when state
      showed the clock had stepped back (see judge); on a custom clock, each decision of a batch
      was made at its own reading
  each caller key's reset mark (0: none), read by readMarks, only when `marked` (an allowed
      spend where some key has one): a spend's receipt keeps them, and a refund gives nothing
      back on a key whose mark has moved since (it was reset after the spend)
  for a policy with a lockout, the end of the latest lockout holding the call back (0: none)
]]
local function writeDecision(reply, n, ref, clockNow, allowed, remaining, binding, wait, refusing, resetAfter,
                             limitCount, keyCount, marked, block, blockedUntil)
  local flags, i = allowed and 1 or 0, n + 2
  reply[i] = remaining
  if not allowed then
    i = i + 1
    reply[i] = behind(wait, clockNow)
  end
  i = i + 1
  reply[i] = behind(resetAfter, clockNow)
  if now ~= ref then
    flags, i = flags + 4, i + 1
    reply[i] = now
  end
  if marked then
    flags = flags + 2
    for k = 1, keyCount do reply[i + k] = markValues[k] end
    i = i + keyCount
  end
  if block then
    i = i + 1
    reply[i] = blockedUntil
  end
  reply[n + 1] = flags + 8 * (binding + (limitCount + 1) * refusing)
  return i
end

--[[
Decision `d` of a run sent again after its first copy was made (`prior`: the run's field, see
lib/outcome.lua): when the spend has an entry there, answers it as writeDecision would, allowed at
its instant with its marks, remaining 0, writing nothing, and returns the index of its last value;
nil when it has none (the spend is new, or was refused: it is decided anew).
]]
local function answerCopy(reply, n, ref, clockNow, prior, d, limitCount, keyCount, block)
  if not prior then return nil end
  local at, marked = readOutcome(prior, d, keyCount, markValues)
  if not at then return nil end
  now = at
  return writeDecision(reply, n, ref, clockNow, true, 0, 1, 0, 0, 0, limitCount, keyCount, marked, block, 0)
end
