--[[
concurrency/model.lua: evaluate, resetIn and commit for concurrency: leases are stored as a sliding
log (one member per unit leased, see concurrency/consume.lua), so this is sliding-log/model.lua.
Included by concurrency/consume.lua and, through lib/models.lua, stack/consume.lua and
batch/consume.lua.
]]
--#include sliding-log/model.lua
