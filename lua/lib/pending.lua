--[[
lib/pending.lua: a bucket's cross-slot spends still open to compensation (see lib/bucket.lua),
stored as the state's optional last field "id/atAge/seg/expiresIn,…", instants relative to the
state's reference instant `ref` (short numbers). Included by the bucket state encodings.
]]
local NO_PENDING = {} -- shared, never written to

local function readPending(text, ref)
  if not text then return NO_PENDING end
  local list = {}
  for id, age, seg, left in string.gmatch(text, '([^/,]+)/(-?%d+)/(-?%d+)/(-?%d+)') do
    list[#list + 1] = {
      id = id, at = ref - tonumber(age), seg = tonumber(seg), expires = ref + tonumber(left),
    }
  end
  return list
end

local function writePending(list, ref)
  if not list or #list == 0 then return '' end
  local parts = {}
  for i, e in ipairs(list) do
    parts[i] = string.format('%s/%d/%d/%d', e.id, ref - e.at, e.seg, e.expires - ref)
  end
  return ':' .. table.concat(parts, ',')
end

--[[
The state table of a bucket whose backlog is `b` (> 0), from the fields both encodings store as
ages before their reference instant `ref` (-1: none) and `pending` (the pending field's text, or
NO_PENDING): written into `into` without prevM and prevLastAt (a decision never reads them), or,
without `into`, a new table with them.
]]
local function stateFrom(into, b, ref, busyAge, m, lastAge, prevM, prevLastAge, pending)
  busyAge, lastAge = busyAge - 0, lastAge - 0
  local busyStart = busyAge < 0 and -1 or ref - busyAge
  local lastAt = lastAge < 0 and -1 or ref - lastAge
  if into then
    into.b, into.busyStart, into.m, into.lastAt = b, busyStart, m - 0, lastAt
    into.pending = pending == NO_PENDING and pending or readPending(pending, ref)
    return into
  end
  prevLastAge = prevLastAge - 0
  return {
    b = b, busyStart = busyStart, m = m - 0, lastAt = lastAt, prevM = prevM - 0,
    prevLastAt = prevLastAge < 0 and -1 or ref - prevLastAge,
    pending = pending == NO_PENDING and pending or readPending(pending, ref),
  }
end

-- The seven numeric fields both encodings store, then what follows (the pending field, if any).
local FIELDS = '^(%-?%d+):(%-?%d+):(%-?%d+):(%-?%d+):(%-?%d+):(%-?%d+):(%-?%d+)(.*)$'
-- The same, without the sixth and seventh (prevM, prevLastAge: a decision never reads them).
local FIELDS5 = '^(%-?%d+):(%-?%d+):(%-?%d+):(%-?%d+):(%-?%d+):%-?%d+:%-?%d+(.*)$'

--[[
A stored bucket state's fields as text (seven, or five when `into` is given, see stateFrom) and
its pending field's text (or NO_PENDING); nothing when the text is not in that form (the encoding
then reads it the way it always was).
]]
local function stateFields(raw, into)
  local f1, f2, busyAge, m, lastAge, prevM, prevLastAge, rest
  if not into then
    f1, f2, busyAge, m, lastAge, prevM, prevLastAge, rest = string.match(raw, FIELDS)
  else
    f1, f2, busyAge, m, lastAge, rest = string.match(raw, FIELDS5)
  end
  local pending = NO_PENDING
  if rest ~= '' then
    local text = rest and string.match(rest, '^:([^:]+)$')
    if not text then return end
    pending = text
  end
  return true, f1, f2, busyAge, m, lastAge, prevM, prevLastAge, pending
end
