--[[
lib/stack-frame.lua: the decision of stack/consume.lua. Like lib/consume-frame.lua, for several
parts (policies) at once: every limit of every part is evaluated before anything is written, and
the spend happens on all of them or on none. No stored key appears in two parts (the caller
checks), so every evaluation sees the state from before this call.

KEYS   part after part; within a part, as in lib/consume-frame.lua: KEYS[base_p + (k-1)*L_p + l]
       is caller key k of part p under its limit l, then its K_p ledgers, then (a policy with a
       lockout) its K_p lockout states
ARGV   [1] now: ms on the limiter's clock, or '' to read Redis TIME
       [2] expiry offset: ms added to absolute expiries (0 on the Redis clock)
       [3] '1' when this is one slot group of a cross-slot spend (Cluster), which may be
           compensated: buckets then keep what makes that exact (see lib/bucket.lua); else '0'
       [4] mode: '1' spend, '0' peek (write nothing), '2' refuse whatever fits and start the
           lockouts a refused spend starts (the slot groups after a refusing one on Cluster)
       [5] spend id, shared by the parts (their stored keys differ), or ''
       [6] deadline: ms on the same clock as now, or '' for none
       [7] P: number of parts; then per part, from position j (8 for the first):
           [j] algorithm, [j+1] cost (or 'cost:lifetime' for a spend that will be settled, see
           readCost in lib/decide.lua), [j+2] key count K, [j+3] its limits ('L;limit,window,burst;…',
           see readRules in lib/decide.lua); the next part starts at j+4
Return {allowed 0|1, refusing part (1-based: the longest wait, ties to the first; 0 if allowed),
        the clock's reading, the instant decided at (as in lib/consume-frame.lua), then six numbers
        per part, as in lib/consume-frame.lua: remaining, binding limit,
        retryAfterMs (0 when the part itself fits), resetAfterMs, refusing key (0 when it fits),
        resetAfterMs had nothing been spent, then K_p reset marks, then for a policy with a
        lockout the end of the latest lockout holding the part back (0: none)}
       or {-1, now} when the deadline had passed
]]
--#include lib/decide.lua

-- Judges every part at `now`; returns whether all fit, the refusing part, and the latest instant
-- a state has seen (see lib/decide.lua).
local function judgeParts(parts, partCount)
  local allowed, refusingPart, longestWait, seen = true, 0, 0, -1
  for p = 1, partCount do
    local part = parts[p]
    cost = part.cost
    local partSeen
    part.fits, part.remaining, part.binding, part.wait, part.refusing, partSeen, part.blockedUntil =
      judge(part.model, part.base, part.keyCount, part.limitCount, part.rules)
    if partSeen > seen then seen = partSeen end
    if not part.fits then
      -- The longest wait refuses; ties go to the first part.
      if allowed or part.wait > longestWait then refusingPart, longestWait = p, part.wait end
      allowed = false
    end
  end
  return allowed, refusingPart, seen
end

local function main()
  if ARGV[6] ~= '' and now > ARGV[6] + 0 then return { -1, now } end

  -- '2': the slot group after a refusing one (Cluster): refused whatever it holds, so it spends
  -- nothing and starts the lockouts its keys out of budget would start.
  local spend = ARGV[4] ~= '0'
  local refuse = ARGV[4] == '2'
  compensable = ARGV[4] == '1' and ARGV[3] == '1'
  local partCount = tonumber(ARGV[7])
  local parts = {}
  local j, base = 8, 0

  for p = 1, partCount do
    local model = models[ARGV[j]]
    if not model then return redis.error_reply('redlimit: unknown algorithm ' .. tostring(ARGV[j])) end
    local keyCount = tonumber(ARGV[j + 2])
    local limitCount, rules = readRules(j + 3)
    local partCost, settleLife = readCost(ARGV[j + 1])
    parts[p] = {
      model = model, cost = partCost, base = base, keyCount = keyCount,
      limitCount = limitCount, rules = rules, settleLife = settleLife,
    }
    j = j + 4
    base = base + keyCount * (limitCount + (rules.block and 2 or 1))
  end

  local clockNow = now
  local allowed, refusingPart, seen = judgeParts(parts, partCount)
  if seen > now then
    now = seen
    allowed, refusingPart = judgeParts(parts, partCount)
  end
  if refuse then allowed = false end

  local reply = { allowed and 1 or 0, refusingPart, clockNow, now }
  for p = 1, partCount do
    local part = parts[p]
    cost = part.cost
    local resetAfter, resetUnspent = settle(part.model, part.base, part.keyCount, part.limitCount,
      part.rules, allowed, spend, true)
    if allowed and spend and part.settleLife then
      register(part.base + part.keyCount * part.limitCount, part.keyCount, part.settleLife)
    end
    -- A part that fitted while another refused reports no wait of its own and nothing spent.
    local remaining = allowed and part.remaining - cost or part.remaining
    local n = #reply
    reply[n + 1], reply[n + 2], reply[n + 3] = remaining, part.binding, behind(part.wait, clockNow)
    reply[n + 4], reply[n + 5] = behind(resetAfter, clockNow), part.refusing
    reply[n + 6] = behind(resetUnspent, clockNow)
    appendResetMarks(reply, part.base + part.keyCount * part.limitCount, part.keyCount, spend and allowed)
    if part.rules.block then reply[#reply + 1] = part.blockedUntil end
  end
  return reply
end
