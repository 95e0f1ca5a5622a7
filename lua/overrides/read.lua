--[[
overrides/read.lua: reads the live policy overrides (see overrides/write.lua).

KEYS   [1] the overrides (hash)  [2] the version  [3] the history (stream)
ARGV   [1] now ('' for Redis TIME)  [2]-[3] unused  [4] 'version', 'list' or 'history'  [5] unused
       [6] for 'history': how many entries, newest first
Return 'version': the version (0 before any write); 'list': {version, now, field, value, …};
       'history': the stream's entries, newest first
]]
local function main()
  local mode = ARGV[4]
  if mode == 'version' then return tonumber(rcall('GET', KEYS[2])) or 0 end
  if mode == 'list' then
    local reply = { tonumber(rcall('GET', KEYS[2])) or 0, now }
    local all = rcall('HGETALL', KEYS[1])
    for i = 1, #all do reply[#reply + 1] = all[i] end
    return reply
  end
  return rcall('XREVRANGE', KEYS[3], '+', '-', 'COUNT', tonumber(ARGV[6]))
end
