--[[
lib/stack-frame.lua: the decision of stack/consume.lua. Like lib/consume-frame.lua, for several
parts (policies) at once: every limit of every part is evaluated before anything is written, and
the spend happens on all of them or on none. No stored key appears in two parts (the caller
checks), so every evaluation sees the state from before this call.

KEYS   part after part; within a part, key-major as in lib/consume-frame.lua:
       KEYS[base_p + (k-1)*L_p + l] is caller key k of part p under its limit l
ARGV   [1] now: ms on the limiter's clock, or '' to read Redis TIME
       [2] expiry offset: ms added to absolute expiries (0 on the Redis clock)
       [3] unused (each part carries its cost)
       [4] mode: '1' spend, '0' peek (write nothing)
       [5] spend id, shared by the parts (their stored keys differ), or ''
       [6] deadline: ms on the same clock as now, or '' for none
       [7] P: number of parts; then per part, from position j (8 for the first):
           [j] algorithm, [j+1] cost, [j+2] key count K, [j+3] L, then for l = 1..L:
           [j+1+3l] limit, [j+2+3l] window ms, [j+3+3l] burst; the next part starts at j+4+3L
Return {allowed 0|1, refusing part (1-based: the longest wait, ties to the first; 0 if allowed),
        now, then six numbers per part, as in lib/consume-frame.lua: remaining, binding limit,
        retryAfterMs (0 when the part itself fits), resetAfterMs, refusing key (0 when it fits),
        resetAfterMs had nothing been spent}
       or {-1, now} when the deadline had passed
]]
if ARGV[6] ~= '' and now > tonumber(ARGV[6]) then return { -1, now } end

local spend = ARGV[4] == '1'
local partCount = tonumber(ARGV[7])
local parts = {}
local allowed = true
local refusingPart, longestWait = 0, 0
local j, base = 8, 0

for p = 1, partCount do
  local model = models[ARGV[j]]
  if not model then return redis.error_reply('redlimit: unknown algorithm ' .. tostring(ARGV[j])) end
  cost = tonumber(ARGV[j + 1])
  local keyCount, limitCount = tonumber(ARGV[j + 2]), tonumber(ARGV[j + 3])
  local rules = {}
  for l = 1, limitCount do
    rules[l] = { tonumber(ARGV[j + 1 + 3 * l]), tonumber(ARGV[j + 2 + 3 * l]), tonumber(ARGV[j + 3 + 3 * l]) }
  end
  j = j + 4 + 3 * limitCount
  local part = {
    model = model, cost = cost, keyCount = keyCount, limitCount = limitCount, rules = rules,
    base = base, evaluations = {}, fits = true, remaining = math.huge, binding = 1,
    wait = 0, refusing = 0, refusingLimit = 1,
  }
  for l = 1, limitCount do
    local rule = rules[l]
    for k = 1, keyCount do
      local i = (k - 1) * limitCount + l
      local ev = model.evaluate(KEYS[base + i], rule[1], rule[2], rule[3])
      part.evaluations[i] = ev
      if not ev.fits then
        part.fits = false
        -- As in consume-frame: the longest wait refuses; ties go to the first key, then limit.
        if part.refusing == 0 or ev.wait > part.wait or (ev.wait == part.wait and k < part.refusing) then
          part.wait, part.refusing, part.refusingLimit = ev.wait, k, l
        end
      end
      if ev.room < part.remaining then part.remaining, part.binding = ev.room, l end
    end
  end
  if not part.fits then
    if allowed or part.wait > longestWait then refusingPart, longestWait = p, part.wait end
    allowed = false
  end
  base = base + keyCount * limitCount
  parts[p] = part
end

local reply = { allowed and 1 or 0, refusingPart, now }
for p = 1, partCount do
  local part = parts[p]
  cost = part.cost
  local resetAfter, resetUnspent = 0, 0
  for l = 1, part.limitCount do
    local rule = part.rules[l]
    for k = 1, part.keyCount do
      local i = (k - 1) * part.limitCount + l
      local ev = part.evaluations[i]
      local reset, unspent = ev.reset(allowed), ev.reset(false)
      if reset > resetAfter then resetAfter = reset end
      if unspent > resetUnspent then resetUnspent = unspent end
      if allowed and spend then part.model.commit(KEYS[part.base + i], ev, rule[1], rule[2], rule[3]) end
    end
  end
  local remaining, binding = part.remaining, part.binding
  if allowed then
    remaining = remaining - cost
  elseif not part.fits then
    binding = part.refusingLimit
  end
  local n = #reply
  reply[n + 1], reply[n + 2], reply[n + 3] = remaining, binding, part.wait
  reply[n + 4], reply[n + 5], reply[n + 6] = resetAfter, part.refusing, resetUnspent
end
return reply
