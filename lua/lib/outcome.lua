--[[
lib/outcome.lua: a spend's outcome marker, so that a spend whose reply never reached its caller
(the connection was lost after the command was written) can be settled later, and a spend sent
twice (a client that sends a command again after reconnecting) is charged once.

Every allowed spend with a spend id leaves a marker: the string key `<prefix>{<tag>}!<spend id>`
(declared in KEYS; the caller's first key's hash tag: same slot; no other key has `}!`), holding
the instant the spend was decided at and, when a caller key had a reset mark, those marks ('at'
or 'at,mark1,…,markK'), kept while the spend weighs and at most OUTCOME_KEEP_MS of real time. A consume that finds its own marker is a
copy of a spend already made: it writes nothing and answers that spend (allowed, at its instant,
with its marks; remaining 0). A refund in outcome mode (see lib/refund-frame.lua) reads the
marker instead of a receipt: none means the spend never ran (or was settled, or is forgotten), and
gives nothing back; else it takes the marker and refunds that spend, once.
]]
local OUTCOME_KEEP_MS = 60000

-- Leaves the marker of the spend just made at `now` (marks: markValues of the K caller keys when
-- `marked`), kept while the spend weighs (`weighsMs`: until its keys hold nothing), at most
-- OUTCOME_KEEP_MS. Out of memory, Redis refuses it: the spend stands, unmarked (a lost reply then
-- stays charged, as before markers).
local function outcomeValue(marked, keyCount, marks)
  local value = string.format('%d', now)
  if marked then
    for k = 1, keyCount do value = value .. ',' .. string.format('%d', marks[k]) end
  end
  return value
end

local function markOutcome(marker, marked, keyCount, marks, weighsMs)
  redis.pcall('SET', marker, outcomeValue(marked, keyCount, marks), 'PX',
    math.max(1, math.min(OUTCOME_KEEP_MS, weighsMs)))
end

--[[
A coalesced run (batch/consume.lua) marks its spends together, in one hash named after the run's
first spend (`<prefix>{<tag>}!<spend id>#run`, the last key; all the run's keys share a slot): a field
per allowed spend, named by its spend id, holding what a marker holds. One write for the run
instead of one per spend. The run that finds its hash is a copy: each spend with a field is
answered from it. A refund in outcome mode with '#' reads and takes that spend's field.
]]
local runFields, runKeep = {}, 0

-- Notes an allowed spend of the run (written by writeRunOutcomes).
local function noteRunOutcome(marked, keyCount, marks, weighsMs)
  runFields[#runFields + 1] = spendId
  runFields[#runFields + 1] = outcomeValue(marked, keyCount, marks)
  if weighsMs > runKeep then runKeep = weighsMs end
end

-- Writes the run's hash (`copy`: it was there already: its expiry only grows).
local function writeRunOutcomes(marker, copy)
  if #runFields == 0 then return end
  for first = 1, #runFields, 200 do
    redis.pcall('HSET', marker, unpack(runFields, first, math.min(#runFields, first + 199)))
  end
  local keepMs = math.max(1, math.min(OUTCOME_KEEP_MS, runKeep))
  if copy then redis.pcall('PEXPIRE', marker, keepMs, 'GT') else redis.pcall('PEXPIRE', marker, keepMs) end
  runFields, runKeep = {}, 0
end

-- Reads a marker's value into its instant and, into `marks` (k = 1..K), the caller keys' reset
-- marks (0 when it holds none); returns the instant and whether any mark was kept.
local function readOutcome(value, keyCount, marks)
  local at, rest = string.match(value, '^(%d+)(.*)$')
  local k, marked = 0, false
  for mark in string.gmatch(rest, ',(%d+)') do
    k = k + 1
    marks[k], marked = tonumber(mark), true
  end
  for j = k + 1, keyCount do marks[j] = 0 end
  return tonumber(at), marked
end
