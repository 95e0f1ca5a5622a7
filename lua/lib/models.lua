--[[
lib/models.lua: every algorithm's evaluate, resetIn and commit (<algorithm>/model.lua) in one table,
`models[algorithm]`, each loaded in its own block so their local helpers never meet. For scripts
that decide for several algorithms at once (stack/consume.lua, batch/consume.lua); they set the
prelude's `cost` (and `spendId`) before they evaluate or commit for a policy.
]]
local models = {}
do
--#include fixed-window/model.lua
  models['fixed-window'] = { evaluate = evaluate, commit = commit, reset = resetIn }
end
do
--#include sliding-window/model.lua
  models['sliding-window'] = { evaluate = evaluate, commit = commit, reset = resetIn }
end
do
--#include token-bucket/model.lua
  models['token-bucket'] = { evaluate = evaluate, commit = commit, reset = resetIn }
end
do
--#include gcra/model.lua
  models['gcra'] = { evaluate = evaluate, commit = commit, reset = resetIn }
end
do
--#include sliding-log/model.lua
  models['sliding-log'] = { evaluate = evaluate, commit = commit, reset = resetIn }
end
do
--#include sliding-log/model.lua
  models['concurrency'] = { evaluate = evaluate, commit = commit, reset = resetIn } -- leases: a sliding log
end
