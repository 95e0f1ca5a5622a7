--[[
sliding-log/model.lua: evaluate, resetIn and commit (see lib/decide.lua)
for sliding-log, as lib/consume-frame.lua and lib/stack-frame.lua call them. Reads the prelude's
now, offset, cost and spendId (cost is set per part by the stack frame). Included by
sliding-log/consume.lua and stack/consume.lua; see consume.lua for the stored state.
]]
local function evaluate(key, limit, window, burst, ev)
  local cut = string.format('%d', now - window) -- members at or before it no longer count
  local since = '(' .. cut
  local count = rcall('ZCOUNT', key, since, '+inf')
  local fits = count + cost <= limit
  local wait = 0
  if not fits then
    local oldest = rcall('ZRANGEBYSCORE', key, since, '+inf', 'WITHSCORES', 'LIMIT', count + cost - limit - 1, 1)
    wait = tonumber(oldest[2]) + window - now
  end
  ev.fits, ev.room, ev.wait, ev.seen = fits, limit - count, wait, nil
  ev.count, ev.since, ev.cut = count, since, cut
  return ev
end

local function resetIn(ev, spent, key, limit, window)
  if spent then return window end
  if ev.count == 0 then return 0 end
  local newest = rcall('ZREVRANGEBYSCORE', key, '+inf', ev.since, 'WITHSCORES', 'LIMIT', 0, 1)
  return tonumber(newest[2]) + window - now
end

local function commit(key, ev, limit, window)
  rcall('ZREMRANGEBYSCORE', key, '-inf', ev.cut)
  if cost == 1 then
    rcall('ZADD', key, now, spendId)
  else
    for first = 1, cost, 100 do
      local args = {}
      for n = first, math.min(cost, first + 99) do
        args[#args + 1] = now
        args[#args + 1] = spendId .. '.' .. n
      end
      rcall('ZADD', key, unpack(args))
    end
  end
  -- One window after the newest member. Every write leaves a log's expiry at least that for the
  -- members it holds, so it only ever moves later (GT: newer members than `now`, after the clock
  -- stepped back, keep theirs); a log that held nothing that counts was emptied above and is new.
  if ev.count == 0 then
    rcall('PEXPIREAT', key, now + window + offset)
  else
    rcall('PEXPIREAT', key, now + window + offset, 'GT')
  end
end
