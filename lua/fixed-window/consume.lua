--[[
fixed-window/consume.lua: check every limit on every key; spend on all of them only if all allow.

State per (key, limit), on the Redis clock: a plain integer counter whose absolute expiry IS its
window's end. While the key lives with that expiry it belongs to that window, so the value needs no
window id (72 bytes per key). A key whose PEXPIRETIME is an earlier window's end (or no window's
end: another algorithm) counts as empty: this also covers the instant between the script's start
(when Redis checks expiry) and the TIME reading. A later window's end means the clock stepped back:
the state is never overwritten by an older reading (see lib/decide.lua, `seen`).

On a custom clock, expiries are shifted by an offset that differs between processes, so the value
names its window: "count:windowEnd" (about 88 bytes per key).

KEYS, ARGV and the reply: see lib/consume-frame.lua (burst is not used).
]]
--#include fixed-window/model.lua
--#include lib/consume-frame.lua
