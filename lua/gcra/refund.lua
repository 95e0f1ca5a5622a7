--[[
gcra/refund.lua: move the theoretical arrival time back by what one spend took, never below now
and never further than removing the spend from history would; nothing once the allowance has
been whole since the spend. Never creates a key.

KEYS, ARGV and the reply: see lib/refund-frame.lua.
]]
--#include lib/gcra-state.lua
--#include lib/bucket.lua
--#include lib/refund-frame.lua
