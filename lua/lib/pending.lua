--[[
lib/pending.lua: a bucket's cross-slot spends still open to compensation (see lib/bucket.lua),
stored as the state's optional last field "id/atAge/seg/expiresIn,…", instants relative to the
state's reference instant `ref` (short numbers). Included by the bucket state encodings.
]]
local NO_PENDING = {} -- shared, never written to

local function readPending(text, ref)
  if not text then return NO_PENDING end
  local list = {}
  for id, age, seg, left in string.gmatch(text, '([^/,]+)/(-?%d+)/(-?%d+)/(-?%d+)') do
    list[#list + 1] = {
      id = id, at = ref - tonumber(age), seg = tonumber(seg), expires = ref + tonumber(left),
    }
  end
  return list
end

local function writePending(list, ref)
  if not list or #list == 0 then return '' end
  local parts = {}
  for i, e in ipairs(list) do
    parts[i] = string.format('%s/%d/%d/%d', e.id, ref - e.at, e.seg, e.expires - ref)
  end
  return ':' .. table.concat(parts, ',')
end
