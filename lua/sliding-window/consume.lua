--[[
sliding-window/consume.lua: weighted two-window counter; check every limit on every key and
spend on all of them only if all allow.

State per (key, limit): the string "w:cur:prev", where w = floor(now / window) when last written,
cur = units charged in window w and prev = units charged in window w - 1. The key expires at the
end of window w + 1, after which cur no longer weighs on anything.

With e = now - w * window elapsed in the current window, the estimate is
  prev * (window - e) / window + cur
and a call of `cost` is allowed when prev * (window - e) + (cur + cost) * window <= limit * window,
all in whole numbers (limit * window < 2^53 is checked before the script runs).

KEYS, ARGV and the reply: see lib/consume-frame.lua (burst is not used).
]]
--#include sliding-window/model.lua
--#include lib/consume-frame.lua
