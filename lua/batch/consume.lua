--[[
batch/consume.lua: several independent decisions (consume or peek) that arrived together on one
client, evaluated one after another in arrival order, each exactly as lib/consume-frame.lua would
(atomic and all-or-nothing on its own keys, a refusal writes nothing), each with its own answer.
One script run and one TIME reading for all of them: observably the same as separate calls in
that order, at the same instant.

KEYS   decision after decision; within one, as in lib/consume-frame.lua (state keys, then ledgers)
ARGV   [1] now: ms on the limiter's clock, or '' to read Redis TIME
       [2] expiry offset: ms added to absolute expiries (0 on the Redis clock)
       [3] unused, [4] unused, [5] unused, [6] unused
       [7] R: number of rule sets (policies) the decisions refer to; then per rule set, from
           position j (8 for the first): [j] algorithm, [j+1] L, then for l = 1..L:
           [j-1+3l] limit, [j+3l] window ms, [j+1+3l] burst; the next starts at j+2+3L
       then D, the number of decisions; then per decision, from position j:
           [j] rule set (1-based), [j+1] cost, [j+2] mode ('1' spend, '0' peek),
           [j+3] spend id or '', [j+4] deadline or '', [j+5] now of a custom clock when the
           decision was made, or '' (then the batch's Redis TIME), [j+6] key count K;
           the next starts at j+7
Return 9 + K values per decision, as lib/consume-frame.lua returns them; a decision whose
       deadline had passed answers -1, now and zeros (and wrote nothing); one whose evaluation
       raised an error (e.g. a key of another type) answers -2, the message and zeros, and the
       other decisions stand
]]
--#include lib/models.lua

--#include lib/decide.lua

-- One decision, as lib/consume-frame.lua makes it, its 9 + K reply values written from reply[n + 1].
local function decide(reply, n, base, rules, spend, deadline, keyCount)
  if deadline ~= '' and now > tonumber(deadline) then
    reply[n + 1], reply[n + 2] = -1, now
    return
  end
  local model, limitCount = rules.model, rules.count
  local clockNow = now
  local evaluations, allowed, remaining, binding, wait, refusing, seen =
    judge(model.evaluate, base, keyCount, limitCount, rules)
  if seen > now then
    now = seen
    evaluations, allowed, remaining, binding, wait, refusing =
      judge(model.evaluate, base, keyCount, limitCount, rules)
  end
  local resetAfter, resetUnspent =
    settle(model.commit, evaluations, base, keyCount, limitCount, rules, allowed, spend)
  if allowed then remaining = remaining - cost end
  reply[n + 1], reply[n + 2], reply[n + 3] = allowed and 1 or 0, remaining, binding
  reply[n + 4], reply[n + 5], reply[n + 6] = behind(wait, clockNow), behind(resetAfter, clockNow), refusing
  reply[n + 7], reply[n + 8], reply[n + 9] = clockNow, behind(resetUnspent, clockNow), now
  appendResetMarksAt(reply, n + 9, base + keyCount * limitCount, keyCount, spend and allowed)
end

local function main()
  local batchNow = now
  local sets = {}
  local j = 8
  for r = 1, tonumber(ARGV[7]) do
    local model = models[ARGV[j]]
    if not model then return redis.error_reply('redlimit: unknown algorithm ' .. tostring(ARGV[j])) end
    local limitCount, rules = readRules(j + 1)
    rules.model, rules.count = model, limitCount
    sets[r] = rules
    j = j + 2 + 3 * limitCount
  end
  local reply = {}
  local n, base = 0, 0
  for d = 1, tonumber(ARGV[j]) do
    j = j + 1
    local rules = sets[tonumber(ARGV[j])]
    cost = tonumber(ARGV[j + 1])
    spendId = ARGV[j + 3]
    now = ARGV[j + 5] ~= '' and tonumber(ARGV[j + 5]) or batchNow
    local keyCount = tonumber(ARGV[j + 6])
    local ok, err = pcall(decide, reply, n, base, rules, ARGV[j + 2] == '1', ARGV[j + 4], keyCount)
    if not ok then
      for v = 1, 9 + keyCount do reply[n + v] = 0 end
      reply[n + 1], reply[n + 2] = -2, type(err) == 'table' and err.err or tostring(err)
    else
      for v = n + 1, n + 9 + keyCount do
        if reply[v] == nil then reply[v] = 0 end -- a late decision answers -1, now and zeros
      end
    end
    n = n + 9 + keyCount
    base = base + keyCount * (rules.count + 1)
    j = j + 6
  end
  return reply
end
