--[[
lib/models.lua: every algorithm's evaluate, resetIn and commit (<algorithm>/model.lua) in one table,
`models[algorithm]`, for scripts that decide for several algorithms at once (stack/consume.lua,
batch/consume.lua); they set the prelude's `cost` (and `spendId`) before they evaluate or commit
for a policy.

`--#models` is expanded when the scripts are assembled (lib/stores/scripts.ts), once per algorithm
of lib/core/algorithms/algorithm.registry.ts, in its own block so the models' local helpers never
meet:
  do
  --#include <algorithm>/model.lua
    models['<algorithm>'] = { evaluate = evaluate, commit = commit, reset = resetIn, ids = <bool> }
  end
where `ids` is the definition's keepsSpendIds (the state keeps one entry per spend, so every
decision carries a spend id; see batch/consume.lua).
]]
local models = {}
--#models
