--[[
token-bucket/model.lua: evaluate and commit for token-bucket (lib/bucket.lua over lib/token-bucket-state.lua), as
lib/consume-frame.lua and lib/stack-frame.lua call them. Included by token-bucket/consume.lua and
stack/consume.lua.
]]
--#include lib/token-bucket-state.lua
--#include lib/bucket.lua
