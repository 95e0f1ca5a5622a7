--[[
token-bucket/consume.lua: a bucket of `burst` tokens (default `limit`) refilled with `limit` tokens
per `window`; check every limit on every key and spend on all of them only if all allow.

State per (key, limit): "tokens:at:busyStart:m", tokens in units of 1/window token at instant at;
see lib/bucket.lua. The key expires when the bucket would be full again.

KEYS, ARGV and the reply: see lib/consume-frame.lua.
]]
--#include token-bucket/model.lua
--#include lib/consume-frame.lua
