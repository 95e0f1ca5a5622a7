--[[
token-bucket/refund.lua: give back what one spend took, as lib/bucket.lua describes: tokens back,
capped by what removing the spend from history would leave, nothing once the bucket has been full
since the spend. Never creates a key.

KEYS, ARGV and the reply: see lib/refund-frame.lua.
]]
--#include lib/token-bucket-state.lua
--#include lib/bucket.lua
--#include lib/refund-frame.lua
