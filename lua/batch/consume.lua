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
       [7] D: number of decisions; then per decision, from position j (8 for the first):
           [j] algorithm, [j+1] cost, [j+2] mode ('1' spend, '0' peek), [j+3] spend id or '',
           [j+4] deadline or '', [j+5] now of a custom clock when the decision was made, or ''
           (then the batch's Redis TIME), [j+6] key count K, [j+7] L, then for l = 1..L:
           [j+5+3l] limit, [j+6+3l] window ms, [j+7+3l] burst; the next starts at j+8+3L
Return 9 + K values per decision, as lib/consume-frame.lua returns them; a decision whose
       deadline had passed answers -1, now and zeros (and wrote nothing); one whose evaluation
       raised an error (e.g. a key of another type) answers -2, the message and zeros, and the
       other decisions stand
]]
--#include lib/prelude.lua
--#include lib/models.lua

--#include lib/decide.lua

local reply = {}
local batchNow = now
local j, base = 8, 0

-- One decision, as lib/consume-frame.lua makes it; returns its 9 + K reply values.
local function decide(model, spend, deadline, keyCount, limitCount, rules)
  if deadline ~= '' and now > tonumber(deadline) then return { -1, now } end
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
  local answer = { allowed and 1 or 0, remaining, binding, behind(wait, clockNow),
    behind(resetAfter, clockNow), refusing, clockNow, behind(resetUnspent, clockNow), now }
  appendResetMarks(answer, base + keyCount * limitCount, keyCount, spend and allowed)
  return answer
end

for d = 1, tonumber(ARGV[7]) do
  local model = models[ARGV[j]]
  if not model then return redis.error_reply('redlimit: unknown algorithm ' .. tostring(ARGV[j])) end
  cost = tonumber(ARGV[j + 1])
  local spend = ARGV[j + 2] == '1'
  spendId = ARGV[j + 3]
  local deadline = ARGV[j + 4]
  now = ARGV[j + 5] ~= '' and tonumber(ARGV[j + 5]) or batchNow
  local keyCount = tonumber(ARGV[j + 6])
  local limitCount, rules = readRules(j + 7)
  j = j + 8 + 3 * limitCount
  local ok, answer = pcall(decide, model, spend, deadline, keyCount, limitCount, rules)
  if not ok then
    local message = type(answer) == 'table' and answer.err or tostring(answer)
    answer = { -2, message }
  end
  local n = #reply
  for v = 1, 9 + keyCount do reply[n + v] = answer[v] or 0 end
  base = base + keyCount * (limitCount + 1)
end
return reply
