--[[
batch/consume.lua: several independent decisions (consume or peek) that arrived together on one
client, evaluated one after another in arrival order, each exactly as lib/consume-frame.lua would
(atomic and all-or-nothing on its own keys, a refusal writes nothing), each with its own answer.
One script run and one TIME reading for all of them: observably the same as separate calls in
that order, at the same instant.

KEYS   decision after decision; within one, as in lib/consume-frame.lua (state keys, ledgers,
       lockout states for a policy with a lockout); then, when the run marks its spends, the
       process's outcome hash for the slot (see lib/outcome.lua)
ARGV   [1] now: ms on the limiter's clock, or '' to read Redis TIME
       [2] expiry offset: ms added to absolute expiries (0 on the Redis clock)
       [3] the earliest deadline of the decisions, or '' for none
       [4] each decision's deadline or '', comma-separated (read only when the batch runs after
           the earliest, or on a custom clock)
       [5] on a custom clock, each decision's now when it was made, comma-separated; else ''
       [6] M: more than any decision's key count; negative (-M) when the run marks its spends (the
           outcome hash follows the decisions' keys, and the last two ARGV are the run's field and
           the fields of earlier runs to delete, comma-separated, or '')
       [7] R: number of rule sets (policies) the decisions refer to; then per rule set, from
           position j (8 for the first): [j] algorithm, [j+1] its limits ('L;limit,window,burst;…',
           see readRules in lib/decide.lua); the next starts at j+2
       then D, the number of decisions; then per decision: ((set - 1) × M + K) × 2 + mode (1
           spend, 0 peek), with `set` its rule set (1-based) and K its key count; its cost ('cost:
           lifetime' for a spend that will be settled, see readCost in lib/decide.lua); and, for
           such a spend, or an algorithm whose model has `ids` (sliding-log, concurrency: see
           lib/models.lua), its spend id
       then, when M is negative, the run's field and the fields to delete (see [6])
Return the batch's clock reading, then each decision as writeDecision in lib/decide.lua writes it
       (its instant decided at is there when it is not the batch's reading); a decision whose
       deadline had passed answers -1 alone (and wrote nothing; a copy of a spend already made is
       answered as such); one whose evaluation raised an
       error (e.g. a key of another type) answers -2 and the message, and the other decisions
       stand
]]
--#include lib/models.lua

--#include lib/decide.lua

-- The run's field in the outcome hash, or false when the run marks nothing.
local runField

-- One decision, as lib/consume-frame.lua makes it, answered from reply[n + 1] on; returns the index
-- of its last value.
local function decide(reply, n, ref, base, set, spend, deadline, keyCount, settleLife, d, prior)
  local late = deadline and deadline ~= '' and now > deadline + 0
  local model, rules = set.model, set.rules
  local limitCount = rules.count
  local clockNow = now
  -- A copy of a spend already made is answered even past the deadline (see lib/consume-frame.lua).
  if spend and prior then
    local last = answerCopy(reply, n, ref, clockNow, prior, d, limitCount, keyCount, rules.block)
    if last then return last end
  end
  if late then
    reply[n + 1] = -1
    return n + 1
  end
  local allowed, remaining, binding, wait, refusing, seen, blockedUntil = judge(model, base, keyCount, limitCount, rules)
  if seen > now then
    now = seen
    allowed, remaining, binding, wait, refusing, seen, blockedUntil = judge(model, base, keyCount, limitCount, rules)
  end
  local marked = allowed and spend and readMarks(base + keyCount * limitCount, keyCount)
  local resetAfter = settle(model, base, keyCount, limitCount, rules, allowed, spend, false)
  if allowed and spend and settleLife then register(base + keyCount * limitCount, keyCount, settleLife) end
  if allowed and spend and runField then noteOutcome(d, marked, keyCount, markValues) end
  if allowed then remaining = remaining - cost end
  return writeDecision(reply, n, ref, clockNow, allowed, remaining, binding, wait, refusing, resetAfter, limitCount,
    keyCount, marked, rules.block, blockedUntil)
end

-- Comma-separated values, as many as there are commas plus one (empty ones included).
local function split(text)
  local list = {}
  for value in string.gmatch(text .. ',', '([^,]*),') do list[#list + 1] = value end
  return list
end

local function main()
  local batchNow = now
  -- On the Redis clock every decision is decided at batchNow: deadlines matter only when the
  -- earliest has passed.
  local deadlines = ARGV[3] ~= '' and (customClock or now > tonumber(ARGV[3])) and split(ARGV[4])
  local nows = customClock and split(ARGV[5])
  local stride = number(ARGV[6])
  -- A negative stride: the run marks its spends, in the hash that is the last key (see
  -- lib/outcome.lua); finding its field, the run is a copy of one already made.
  local hash, prior = false, false
  if stride < 0 then
    stride, hash, runField = -stride, KEYS[#KEYS], ARGV[#ARGV - 1]
    pruneRuns(hash, ARGV[#ARGV])
    prior = rcall('HGET', hash, runField)
    beginRun(batchNow, prior)
  else
    runField = false
  end
  local sets = {}
  local j = 8
  for r = 1, number(ARGV[7]) do
    local model = models[ARGV[j]]
    if not model then return redis.error_reply('redlimit: unknown algorithm ' .. tostring(ARGV[j])) end
    local _, rules = readRules(j + 1)
    sets[r] = { model = model, rules = rules, ids = model.ids }
    j = j + 2
  end
  local reply = { batchNow }
  local n, base = 1, 0
  for d = 1, number(ARGV[j]) do
    local meta = number(ARGV[j + 1])
    local spend = meta % 2 == 1
    meta = (meta - meta % 2) / 2
    local keyCount = meta % stride
    local set = sets[(meta - keyCount) / stride + 1]
    local settleLife
    cost, settleLife = readCost(ARGV[j + 2])
    j = j + 2
    if set.ids or settleLife then
      j = j + 1
      spendId = ARGV[j]
    else
      spendId = ''
    end
    now = nows and tonumber(nows[d]) or batchNow
    local ok, last = pcall(decide, reply, n, batchNow, base, set, spend, deadlines and deadlines[d], keyCount,
      settleLife, d, prior)
    if ok then
      n = last
    else
      -- What the failed decision wrote past its answer goes (at most status, remaining, retryAfter,
      -- resetAfter, decided at, K marks and a lockout's end): the next one's starts after it.
      for v = n + 3, n + 6 + keyCount do reply[v] = nil end
      reply[n + 1], reply[n + 2] = -2, type(last) == 'table' and last.err or tostring(last)
      n = n + 2
    end
    base = base + keyCount * (set.rules.count + (set.rules.block and 2 or 1))
  end
  if hash then writeRun(hash, runField, prior or nil) end
  return reply
end
