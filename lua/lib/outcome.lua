--[[
lib/outcome.lua: spends' outcome markers, so that a spend whose reply never reached its caller (the
connection was lost after the command was written) can be settled later, and a spend sent twice
(a client that sends a command again after reconnecting) is charged once.

Markers are kept by run: a lone decision is a run of one, a coalesced batch (batch/consume.lua)
is one run. Each process keeps one hash per Cluster slot, `<prefix>{<slot tag>}!<process tag>`
(declared in KEYS, last; the slot tag is a short text in the decisions' slot; no other stored key
has `}!`), with a field per run that allowed a spend, named by the caller (the run's first spend
id: a lone run's is its spend id, a batch's has '*' after it), holding the instant the run was
decided at, then per allowed spend `;<d>[@<at>][,<mark>…]`: d its place in the run (from 1), `at`
when it was decided at another instant than the run's, and the caller keys' reset marks when any
was set; and a field `~` (empty) while the hash exists. A run that allowed a spend writes its field
with one HSET (a field of a hash that exists costs Redis a fraction of a key created and later
expired); the hash is kept OUTCOME_KEEP_MS of real time from when it was created (HSET added `~`
too) or refreshed (the caller asks for it at least every 20 s while it writes there: every field
is kept at least 60 s after its write). The process deletes a run's field once its reply came (the
field names come, sixteen or more at a time, with a later run on that slot), and a settlement
takes its spend's entry, so the hash holds the runs in flight and little more.
]]
local OUTCOME_KEEP_MS = 80000

-- The entries of the run under way (allowed spends), and the instant its field is written with.
local runEntries, runAt = {}, 0

-- Starts a run decided at `at` (a copy continues its first copy's field: `prior`, that value).
local function beginRun(at, prior)
  runEntries = {}
  runAt = prior and tonumber(string.match(prior, '^%d+')) or at
end

-- Notes the spend just allowed at `now`, decision `d` of the run (marks: markValues of its K
-- caller keys when `marked`); writeRun writes them.
local function noteOutcome(d, marked, keyCount, marks)
  local entry = ';' .. d
  if now ~= runAt then entry = entry .. '@' .. string.format('%d', now) end
  if marked then
    for k = 1, keyCount do entry = entry .. ',' .. string.format('%d', marks[k]) end
  end
  runEntries[#runEntries + 1] = entry
end

-- Deletes from `hash` the fields of earlier runs whose replies came, and returns whether to keep
-- the hash OUTCOME_KEEP_MS more (`done`: the fields comma-separated, after '+' for the refresh, or
-- ''). First thing in a run, copy or late alike (a copy of a run carries the same names: deleting
-- them again is nothing).
local function pruneRuns(hash, done)
  if done == '' then return false end
  local refresh = string.byte(done, 1) == 43 -- '+'
  if refresh then
    redis.pcall('PEXPIRE', hash, OUTCOME_KEEP_MS)
    done = string.sub(done, 2)
  end
  if done ~= '' then
    local fields = {}
    for name in string.gmatch(done, '[^,]+') do fields[#fields + 1] = name end
    redis.pcall('HDEL', hash, unpack(fields))
  end
  return refresh
end

-- Writes the run's field (after `prior`, the value a copy found) when the run allowed a spend; a
-- hash it created is kept OUTCOME_KEEP_MS. Out of memory, Redis refuses it: the spends stand,
-- unmarked (a lost reply then stays charged: a unit lost, never one created).
local function writeRun(hash, field, prior)
  if #runEntries == 0 then return end
  local value = (prior or string.format('%d', runAt)) .. table.concat(runEntries)
  if redis.pcall('HSET', hash, field, value, '~', '') == 2 then
    redis.pcall('PEXPIRE', hash, OUTCOME_KEEP_MS)
  end
  runEntries = {}
end

-- Spend `d`'s entry in a run's field `value`: its instant, and its caller keys' reset marks into
-- `marks` (k = 1..K; 0 when it holds none) with whether any was kept; nil when it has none.
local function readOutcome(value, d, keyCount, marks)
  local base = string.match(value, '^%d+')
  for entry in string.gmatch(value, ';([^;]*)') do
    local place, at, rest = string.match(entry, '^(%d+)@?(%d*)(.*)$')
    if tonumber(place) == d then
      local k, marked = 0, false
      for mark in string.gmatch(rest, ',(%d+)') do
        k = k + 1
        marks[k], marked = tonumber(mark), true
      end
      for j = k + 1, keyCount do marks[j] = 0 end
      return tonumber(at ~= '' and at or base), marked
    end
  end
  return nil
end

-- A run's field `value` without spend `d`'s entry, or nil when no entry is left.
local function withoutOutcome(value, d)
  local kept = { string.match(value, '^%d+') }
  for entry in string.gmatch(value, ';([^;]*)') do
    if tonumber(string.match(entry, '^%d+')) ~= d then kept[#kept + 1] = ';' .. entry end
  end
  return #kept > 1 and table.concat(kept) or nil
end
