--[[
stack/consume.lua: several policies (parts), each with its own algorithm, limits, keys and cost,
decided as one: spend on every key of every part only if every limit of every part allows.

Every algorithm's model is loaded into `models` (lib/models.lua), each in its own block so their helpers
never meet; lib/stack-frame.lua sets `cost` to each part's own before evaluating or committing it.

KEYS, ARGV and the reply: see lib/stack-frame.lua.
]]
--#include lib/models.lua
--#include lib/stack-frame.lua
