--[[
overrides/read.lua: reads the live policy overrides (see overrides/write.lua).

KEYS   [1] the overrides (hash)  [2] the version  [3] the history (stream)  [4] the generation
ARGV   [1] now ('' for Redis TIME)  [2]-[3] unused  [4] 'version', 'stamp', 'list' or 'history'
       [5] unused  [6] for 'history': how many entries, newest first
Return 'version': the version (0 before any write); 'stamp': "<generation>:<version>";
       'list': {version, now, stamp, field, value, …}; 'history': the stream's entries, newest first
]]
local function stamp()
  return (rcall('GET', KEYS[4]) or '') .. ':' .. (rcall('GET', KEYS[2]) or '0')
end

local function main()
  local mode = ARGV[4]
  if mode == 'version' then return tonumber(rcall('GET', KEYS[2])) or 0 end
  if mode == 'stamp' then return stamp() end
  if mode == 'list' then
    local reply = { tonumber(rcall('GET', KEYS[2])) or 0, now, stamp() }
    local all = rcall('HGETALL', KEYS[1])
    for i = 1, #all do reply[#reply + 1] = all[i] end
    return reply
  end
  return rcall('XREVRANGE', KEYS[3], '+', '-', 'COUNT', tonumber(ARGV[6]))
end
