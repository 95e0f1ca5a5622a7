--[[
fixed-window/consume.lua: check every limit on every key; spend on all of them only if all allow.

State per (key, limit): a plain integer counter whose absolute expiry IS its window's end
(+ offset). While the key lives with that expiry it belongs to the current window, so the value
needs no window id (72 bytes per key). A key whose PEXPIRETIME differs belongs to another window
(or to another algorithm) and counts as empty: this also covers the instant between the script's
start (when Redis checks expiry) and the TIME reading.

KEYS, ARGV and the reply: see lib/consume-frame.lua (burst is not used).
]]
--#include lib/prelude.lua
--#include fixed-window/model.lua
--#include lib/consume-frame.lua
