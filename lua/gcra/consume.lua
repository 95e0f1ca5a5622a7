--[[
gcra/consume.lua: generic cell rate algorithm. Emission interval window / limit, burst tolerance
`burst` (default `limit`) cells; check every limit on every key and spend on all of them only if
all allow.

State per (key, limit): "tat:rem:busyStart:m", see lib/gcra-state.lua and lib/bucket.lua. The key
expires at the theoretical arrival time, when the allowance is whole again.

KEYS, ARGV and the reply: see lib/consume-frame.lua.
]]
--#include gcra/model.lua
--#include lib/consume-frame.lua
