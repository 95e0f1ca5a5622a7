--[[
stack/consume.lua: several policies (parts), each with its own algorithm, limits, keys and cost,
decided as one: spend on every key of every part only if every limit of every part allows.

Every algorithm's model is loaded into `models`, each in its own block so their local helpers
never meet; lib/stack-frame.lua sets `cost` to each part's own before evaluating or committing it.

KEYS, ARGV and the reply: see lib/stack-frame.lua.
]]
--#include lib/prelude.lua
local models = {}
do
--#include fixed-window/model.lua
  models['fixed-window'] = { evaluate = evaluate, commit = commit }
end
do
--#include sliding-window/model.lua
  models['sliding-window'] = { evaluate = evaluate, commit = commit }
end
do
--#include token-bucket/model.lua
  models['token-bucket'] = { evaluate = evaluate, commit = commit }
end
do
--#include gcra/model.lua
  models['gcra'] = { evaluate = evaluate, commit = commit }
end
do
--#include sliding-log/model.lua
  models['sliding-log'] = { evaluate = evaluate, commit = commit }
end
--#include lib/stack-frame.lua
