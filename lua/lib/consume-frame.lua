--[[
lib/consume-frame.lua: the part of every consume script that is the same for all algorithms.
Included (by the script loader) at the end of lua/<algorithm>/consume.lua, which defines:

  evaluate(key, limit, window, burst) -> { fits, room, wait, reset(spent), ... }
      fits   whether `cost` fits under this limit on this key now
      room   whole units left before this call
      wait   when it does not fit: ms until it does, if nobody else spends
      reset  function(spent): ms until the key holds nothing under this limit
  commit(key, ev, limit, window, burst)   writes the spend evaluated as `ev`

KEYS   one per (caller key, limit), key-major: KEYS[(k-1)*L + l] is caller key k under limit l
ARGV   [1] now: ms on the limiter's clock, or '' to read Redis TIME
       [2] expiry offset: ms added to absolute expiries (0 on the Redis clock)
       [3] cost: whole units to charge on every key
       [4] mode: '1' spend, '0' peek (write nothing)
       [5] spend id: unique per spend (members of a sliding log), or ''
       [6] deadline: ms on the same clock as now, or '' for none. A script that runs after it (the
           caller already gave up: a delayed, queued or replayed command) writes nothing
       [7] L: number of limits, then for l = 1..L: [5 + 3l] limit, [6 + 3l] window ms, [7 + 3l] burst
Return {allowed 0|1, remaining, binding limit (1-based: the refusing one when refused),
        retryAfterMs, resetAfterMs, refusing key (1-based, 0 if allowed), now,
        resetAfterMs had nothing been spent (to merge the answers of several Cluster slots)}
       or {-1, now} when the deadline had passed
]]
if ARGV[6] ~= '' and now > tonumber(ARGV[6]) then return { -1, now } end

local spend = ARGV[4] == '1'
local evaluations = {}
local allowed = true
local remaining, binding = math.huge, 1
local retryAfter, refusing, refusingLimit = 0, 0, 1
local limitCount = tonumber(ARGV[7])
local keyCount = #KEYS / limitCount
local rules = {}
for l = 1, limitCount do
  rules[l] = { tonumber(ARGV[5 + 3 * l]), tonumber(ARGV[6 + 3 * l]), tonumber(ARGV[7 + 3 * l]) }
end

for l = 1, limitCount do
  local limit, window, burst = rules[l][1], rules[l][2], rules[l][3]
  for k = 1, keyCount do
    local i = (k - 1) * limitCount + l
    local ev = evaluate(KEYS[i], limit, window, burst)
    evaluations[i] = ev
    if not ev.fits then
      allowed = false
      -- The longest wait refuses; ties go to the first key, then the first limit (as in every store).
      if refusing == 0 or ev.wait > retryAfter or (ev.wait == retryAfter and k < refusing) then
        retryAfter, refusing, refusingLimit = ev.wait, k, l
      end
    end
    if ev.room < remaining then remaining, binding = ev.room, l end -- ties: the first limit
  end
end

local resetAfter, resetUnspent = 0, 0
for l = 1, limitCount do
  local limit, window, burst = rules[l][1], rules[l][2], rules[l][3]
  for k = 1, keyCount do
    local i = (k - 1) * limitCount + l
    local ev = evaluations[i]
    local reset, unspent = ev.reset(allowed), ev.reset(false)
    if reset > resetAfter then resetAfter = reset end
    if unspent > resetUnspent then resetUnspent = unspent end
    if allowed and spend then commit(KEYS[i], ev, limit, window, burst) end
  end
end

if allowed then
  retryAfter, refusing, remaining = 0, 0, remaining - cost
else
  binding = refusingLimit
end

return { allowed and 1 or 0, remaining, binding, retryAfter, resetAfter, refusing, now, resetUnspent }
