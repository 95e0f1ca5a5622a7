--[[
batch/consume.lua: several independent decisions (consume or peek) that arrived together on one
client, evaluated one after another in arrival order, each exactly as lib/consume-frame.lua would
(atomic and all-or-nothing on its own keys, a refusal writes nothing), each with its own answer.
One script run and one TIME reading for all of them: observably the same as separate calls in
that order, at the same instant.

KEYS   decision after decision; within one, as in lib/consume-frame.lua (state keys, ledgers, and
       lockout states for a policy with a lockout)
ARGV   [1] now: ms on the limiter's clock, or '' to read Redis TIME
       [2] expiry offset: ms added to absolute expiries (0 on the Redis clock)
       [3] the earliest deadline of the decisions, or '' for none
       [4] each decision's deadline or '', comma-separated (read only when the batch runs after
           the earliest, or on a custom clock)
       [5] on a custom clock, each decision's now when it was made, comma-separated; else ''
       [6] M: more than any decision's key count
       [7] R: number of rule sets (policies) the decisions refer to; then per rule set, from
           position j (8 for the first): [j] algorithm, [j+1] L (or 'L:…' with a lockout, see
           readRules in lib/decide.lua), then for l = 1..L:
           [j-1+3l] limit, [j+3l] window ms, [j+1+3l] burst; the next starts at j+2+3L
       then D, the number of decisions; then per decision: ((set - 1) × M + K) × 2 + mode (1
           spend, 0 peek), with `set` its rule set (1-based) and K its key count; its cost ('cost:
           lifetime' for a spend that will be settled, see readCost in lib/decide.lua); and, for an
           algorithm whose model has `ids` (sliding-log, concurrency: see lib/models.lua) or a
           spend that will be settled, its spend id
Return the batch's clock reading, then 5 + K values per decision (6 + K with a lockout), as
       lib/consume-frame.lua returns them after its clock reading; a decision whose deadline had passed answers -1 and zeros
       (and wrote nothing); one whose evaluation raised an error (e.g. a key of another type)
       answers -2, the message and zeros, and the other decisions stand
]]
--#include lib/models.lua

--#include lib/decide.lua

-- One decision, as lib/consume-frame.lua makes it, its 5 + K reply values written from reply[n + 1].
local function decide(reply, n, base, rules, spend, deadline, keyCount, settleLife)
  if deadline and deadline ~= '' and now > tonumber(deadline) then
    reply[n + 1] = -1
    return
  end
  local model, limitCount = rules.model, rules.count
  local clockNow = now
  local allowed, remaining, binding, wait, refusing, seen, blockedUntil = judge(model, base, keyCount, limitCount, rules)
  if seen > now then
    now = seen
    allowed, remaining, binding, wait, refusing, seen, blockedUntil = judge(model, base, keyCount, limitCount, rules)
  end
  local resetAfter = settle(model, base, keyCount, limitCount, rules, allowed, spend, false)
  if allowed and spend and settleLife then register(base + keyCount * limitCount, keyCount, settleLife) end
  if allowed then remaining = remaining - cost end
  reply[n + 1], reply[n + 2], reply[n + 3] = status(allowed, binding, refusing, limitCount), remaining, behind(wait, clockNow)
  reply[n + 4], reply[n + 5] = behind(resetAfter, clockNow), now
  appendResetMarksAt(reply, n + 5, base + keyCount * limitCount, keyCount, spend and allowed)
  if rules.block then reply[n + 6 + keyCount] = blockedUntil end
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
  local sets = {}
  local j = 8
  for r = 1, number(ARGV[7]) do
    local model = models[ARGV[j]]
    if not model then return redis.error_reply('redlimit: unknown algorithm ' .. tostring(ARGV[j])) end
    local limitCount, rules = readRules(j + 1)
    rules.model, rules.count, rules.ids = model, limitCount, model.ids
    sets[r] = rules
    j = j + 2 + 3 * limitCount
  end
  local reply = { batchNow }
  local n, base = 1, 0
  for d = 1, number(ARGV[j]) do
    local meta = number(ARGV[j + 1])
    local spend = meta % 2 == 1
    meta = (meta - meta % 2) / 2
    local keyCount = meta % stride
    local rules = sets[(meta - keyCount) / stride + 1]
    local settleLife
    cost, settleLife = readCost(ARGV[j + 2])
    j = j + 2
    if rules.ids or settleLife then
      j = j + 1
      spendId = ARGV[j]
    else
      spendId = ''
    end
    now = nows and tonumber(nows[d]) or batchNow
    local length = 5 + keyCount + (rules.block and 1 or 0)
    local ok, err = pcall(decide, reply, n, base, rules, spend, deadlines and deadlines[d], keyCount,
      settleLife)
    if not ok then
      for v = 1, length do reply[n + v] = 0 end
      reply[n + 1], reply[n + 2] = -2, type(err) == 'table' and err.err or tostring(err)
    else
      for v = n + 1, n + length do
        if reply[v] == nil then reply[v] = 0 end -- a late decision answers -1 and zeros
      end
    end
    n = n + length
    base = base + keyCount * (rules.count + (rules.block and 2 or 1))
  end
  return reply
end
