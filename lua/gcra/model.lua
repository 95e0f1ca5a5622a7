--[[
gcra/model.lua: evaluate and commit for gcra (lib/bucket.lua over lib/gcra-state.lua), as
lib/consume-frame.lua and lib/stack-frame.lua call them. Included by gcra/consume.lua and
stack/consume.lua.
]]
--#include lib/gcra-state.lua
--#include lib/bucket.lua
