--[[
overrides/write.lua: stores or removes one live policy override (lib/core/policy-overrides.ts),
moves the overrides' version on by one (every process polls it) and appends the change to the
history (a capped stream). An override is kept as "<version>:<at>:<until>:<json>" under its field
("<policy>\n<scope>"); the JSON is the app's, never decoded here. Overrides whose `until` has
passed are removed on the way (they are no longer in force anywhere).

KEYS   [1] the overrides (hash)  [2] the version  [3] the history (stream)  [4] the generation
ARGV   [1] now ('' for Redis TIME)  [2]-[3] unused  [4] 'set' or 'unset'
       [5] a random generation, kept if none is stored (so a version number that repeats after
       the store lost its overrides comes with another generation: readers read again)
       [6] the field  [7] the override's JSON ('' to unset)  [8] its until ('' for none)
       [9] the history entry's JSON  [10] most history entries kept  [11] ms the history is kept
       after its last entry
Return {version, now, changed}: the version after the write (unchanged when an unset found
nothing), the store's clock, and 1 when something was set or removed
]]
local function main()
  local set, version = ARGV[4] == 'set', tonumber(rcall('GET', KEYS[2])) or 0
  rcall('SET', KEYS[4], ARGV[5], 'NX')
  local changed = 1
  if set then
    version = rcall('INCR', KEYS[2])
    rcall('HSET', KEYS[1], ARGV[6], string.format('%d:%d:%s:%s', version, now, ARGV[8], ARGV[7]))
  elseif rcall('HDEL', KEYS[1], ARGV[6]) == 1 then
    version = rcall('INCR', KEYS[2])
  else
    changed = 0
  end
  if changed == 1 then
    rcall('XADD', KEYS[3], 'MAXLEN', '~', ARGV[10], '*', 'v', version, 'at', now, 'e', ARGV[9])
    rcall('PEXPIRE', KEYS[3], tonumber(ARGV[11]))
  end
  -- Overrides past their `until` go (a reader ignores them already).
  local all = rcall('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    local untilText = string.match(all[i + 1], '^%d+:%d+:(%d*):')
    if untilText and untilText ~= '' and tonumber(untilText) <= now then rcall('HDEL', KEYS[1], all[i]) end
  end
  return { version, now, changed }
end
